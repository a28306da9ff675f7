"""docker-compose.yml is consistent with the Dockerfile, the command line and the settings.

No container engine runs here, so this checks the structure: the services and their order of start, that
every command is one the `ragmeta` command line accepts, that every RAGMETA_ variable is a setting, that the
database URL points at the compose PostgreSQL with its credentials, and that ports and volumes line up.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from sqlalchemy.engine import make_url

from app.cli import build_parser
from services.config import Settings

ROOT = Path(__file__).resolve().parents[2]
WORKERS = ("worker-1", "worker-2")
APP_SERVICES = ("migrate", "api", *WORKERS)
_DEFAULTED = re.compile(r"\$\{(\w+):-([^}]*)\}")


def _interpolate(value: str) -> str:
    """Compose's `${NAME:-default}` with NAME unset."""
    assert "$" not in _DEFAULTED.sub("", value), f"variable without a default in {value!r}"
    return _DEFAULTED.sub(lambda m: m.group(2), value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"]
    return found


def _env(service: dict[str, Any]) -> dict[str, str]:
    return {k: _interpolate(str(v)) for k, v in service.get("environment", {}).items()}


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text(encoding="utf-8")


def test_services_are_postgres_migrate_api_and_two_workers(services: dict[str, Any]) -> None:
    assert set(services) == {"db", *APP_SERVICES}
    assert services["db"]["image"].startswith("postgres:")
    for name in APP_SERVICES:
        assert services[name]["build"] == "."
        assert (ROOT / services[name]["build"] / "Dockerfile").is_file()


def test_commands_are_ragmeta_commands_as_the_image_runs_them(services: dict[str, Any]) -> None:
    # The image runs `python -m app.cli ...` (its CMD); the compose commands use the same entry point.
    assert '"python", "-m", "app.cli"' in _dockerfile()
    parser = build_parser()
    expected = {"migrate": "migrate", "api": "serve", "worker-1": "worker", "worker-2": "worker"}
    for name, subcommand in expected.items():
        command = services[name]["command"]
        assert command[:3] == ["python", "-m", "app.cli"], name
        args = parser.parse_args(command[3:])
        assert args.command == subcommand, name
    ids = [parser.parse_args(services[w]["command"][3:]).id for w in WORKERS]
    assert len(set(ids)) == len(WORKERS) and None not in ids


def test_start_order_db_healthy_then_migrate_then_api_and_workers(services: dict[str, Any]) -> None:
    assert "pg_isready" in " ".join(services["db"]["healthcheck"]["test"])
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert services["migrate"]["restart"] == "no"
    for name in ("api", *WORKERS):
        assert services[name]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}


def test_every_ragmeta_variable_is_a_setting_and_validates(
    services: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in APP_SERVICES:
        env = _env(services[name])
        for var in env:
            if not var.startswith("RAGMETA_"):
                continue
            model: type[BaseModel] = Settings
            *groups, leaf = var.removeprefix("RAGMETA_").lower().split("__")
            for group in groups:
                annotation = model.model_fields[group].annotation
                assert isinstance(annotation, type) and issubclass(annotation, BaseModel), var
                model = annotation
            assert leaf in model.model_fields, f"{var} is not a setting"
        for var, value in env.items():
            monkeypatch.setenv(var, value)
        settings = Settings()
        assert settings.jobs.embedded_worker is False, "the API must leave jobs to the workers"
        assert str(settings.data_dir) == "/data"
        assert not settings.judge.configured


def test_database_url_points_at_the_compose_postgres(services: dict[str, Any]) -> None:
    db_env = _env(services["db"])
    for name in APP_SERVICES:
        url = make_url(_env(services[name])["RAGMETA_DATABASE_URL"])
        assert url.drivername == "postgresql+psycopg", name
        assert url.host == "db" and url.port == 5432, name
        assert url.username == db_env["POSTGRES_USER"], name
        assert url.password == db_env["POSTGRES_PASSWORD"], name
        assert url.database == db_env["POSTGRES_DB"], name
    # The driver named in the URL is installed (the image installs requirements.lock).
    assert "psycopg-binary==" in (ROOT / "requirements.lock").read_text(encoding="utf-8")


def test_api_port_matches_the_image(services: dict[str, Any]) -> None:
    exposed = re.search(r"^EXPOSE (\d+)$", _dockerfile(), re.MULTILINE)
    assert exposed is not None
    args = build_parser().parse_args(services["api"]["command"][3:])
    assert args.host == "0.0.0.0"
    host_port, container_port = services["api"]["ports"][0].split(":")
    assert int(container_port) == args.port == int(exposed.group(1))
    assert int(host_port) > 0
    # The image's health check asks the API; workers serve no HTTP and turn it off.
    assert f"127.0.0.1:{args.port}/healthz" in _dockerfile()
    assert "healthcheck" not in services["api"]
    for name in WORKERS:
        assert services[name]["healthcheck"] == {"disable": True}


def test_api_and_workers_share_the_data_volume(compose: dict[str, Any], services: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        data_dir = _env(services[name])["RAGMETA_DATA_DIR"]
        volume, target = services[name]["volumes"][0].split(":")
        assert target == data_dir, name
        assert volume in compose["volumes"], name
    mounts = {tuple(services[n]["volumes"]) for n in APP_SERVICES}
    assert len(mounts) == 1


def test_readme_documents_the_compose_setup() -> None:
    readme = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    assert "docker compose up" in readme
    for name in ("worker-1", "worker-2", "migrate"):
        assert name in readme
