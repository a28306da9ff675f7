"""The report page store on its own: a page is given back only for its key and fingerprint, is kept only
while no deletion intervened, at most ``max_pages`` are kept, and ``clear`` removes them all."""

from __future__ import annotations

from pathlib import Path

from services.reports.page_store import PageStore, version_text


def _store(tmp_path: Path, fingerprint: str = "f1", context: str = "c", max_pages: int = 8) -> PageStore:
    return PageStore(tmp_path / "pages", context, max_pages, fingerprint=lambda: fingerprint)


def test_a_kept_page_is_given_back_for_its_key_only(tmp_path: Path) -> None:
    store = _store(tmp_path)
    versions = [version_text((("1", "2"), ("3",)))]
    assert store.save((1,), versions, "<p>é</p>".encode(), {"X-Report-Stale": "false"}, lambda: True)
    entry = store.load((1,))
    assert entry is not None and entry["versions"] == versions and entry["body"] == "<p>é</p>"
    assert store.load((2,)) is None


def test_another_fingerprint_or_context_never_gets_the_page(tmp_path: Path) -> None:
    assert _store(tmp_path).save((1,), ["v"], b"page", {}, lambda: True)
    assert _store(tmp_path, fingerprint="f2").load((1,)) is None
    assert _store(tmp_path, context="other settings").load((1,)) is None
    assert _store(tmp_path).load((1,)) is not None


def test_a_page_begun_before_a_deletion_is_not_kept(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.save((1,), ["v"], b"page", {}, lambda: False) is False
    assert store.load((1,)) is None and not list((tmp_path / "pages").glob("*.json"))


def test_at_most_max_pages_are_kept_and_clear_removes_them_all(tmp_path: Path) -> None:
    store = _store(tmp_path, max_pages=3)
    for i in range(5):
        store.save((i,), ["v"], b"page", {}, lambda: True)
    assert len(list((tmp_path / "pages").glob("*.json"))) == 3
    assert store.load((4,)) is not None
    store.clear()
    assert list((tmp_path / "pages").iterdir()) == []
    assert store.load((4,)) is None
