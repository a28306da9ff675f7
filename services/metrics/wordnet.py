"""WordNet for METEOR's synonym module, from Debian's ``wordnet-base`` package, never from a download.

nltk refuses to read /usr/share/wordnet directly (its path sandbox) and Debian's files lack ``lexnames``,
so the files are copied once into the service's data directory and ``lexnames`` is written from the
fixed list of WordNet 3.0 lexicographer files (the same content as the lexnames(5WN) manual page).
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

DEBIAN_DIR = Path("/usr/share/wordnet")
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity "
    "noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition "
    "verb.communication verb.competition verb.consumption verb.contact verb.creation verb.emotion "
    "verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_POS = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_lock = threading.Lock()
_reader: Any = None


def lexnames_text() -> str:
    return "".join(f"{i:02d}\t{name}\t{_POS[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES))


def prepare(data_dir: Path, source: Path = DEBIAN_DIR) -> Path | None:
    """Return a directory nltk's WordNet reader accepts, building it from ``source`` if needed."""
    target = data_dir / "nltk_data" / "corpora" / "wordnet"
    if (target / "lexnames").exists() and (target / "data.noun").exists():
        return target
    if not (source / "data.noun").exists():
        return None
    target.mkdir(parents=True, exist_ok=True)
    for f in source.iterdir():
        if f.is_file() and (
            f.name.startswith(("data.", "index.")) or f.suffix == ".exc" or f.name == "cntlist.rev"
        ):
            shutil.copyfile(f, target / f.name)
    (target / "lexnames").write_text(lexnames_text(), encoding="ascii")
    return target


def authorize(path: Path) -> None:
    """nltk reads corpora only under its data path (a sandbox against path tricks): add our copy's root."""
    import nltk.data

    root = str(path.parents[1])  # .../nltk_data/corpora/wordnet -> .../nltk_data
    if root not in nltk.data.path:
        nltk.data.path.append(root)


def open_reader(path: Path) -> Any:
    """A WordNetCorpusReader on ``path``. Debian ships no Open Multilingual Wordnet, which nltk announces
    with a UserWarning; METEOR only needs the English synsets."""
    import warnings

    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    authorize(path)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        return WordNetCorpusReader(str(path), None)


def reader(data_dir: Path) -> Any:
    """A loaded WordNetCorpusReader, or None when no WordNet package is installed."""
    global _reader
    with _lock:
        if _reader is None:
            path = prepare(data_dir)
            if path is None:
                return None
            _reader = open_reader(path)
        return _reader
