"""Secrets in untracked snapshots are recorded at export (bytes kept exact) and warned about."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.package.models import UntrackedManifest
from contextfork.resources import validate_against_schema
from tests.helpers import Repo, cli
from tests.lifecycle.conftest import reseal

PAT = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
DOTENV = "DATABASE_URL=postgres://app@db/app\nSTRIPE_API_KEY=Zq8vN2xL5rT9wK3mP7yB4cH6\n"


def secret_files(repo: Repo) -> None:
    repo.write("config/.env.local", DOTENV)
    repo.write("notes/todo.md", f"- rotate the token {PAT} tomorrow\n")
    repo.write("assets/blob.bin", b"\x00\x01binary " + PAT.encode())  # binary: not scanned
    repo.write("notes/plain.txt", "nothing to see\n")
    repo.write("src/app.py", f"TOKEN = '{PAT}'\n")  # tracked: in the patch, not a snapshot


def _manifest(pkg: Path) -> dict[str, dict[str, object]]:
    raw = json.loads((pkg / "untracked_manifest.json").read_text())
    assert validate_against_schema("untracked-manifest.schema.json", raw) == []
    UntrackedManifest.model_validate(raw)
    return {f["path"]: f for f in raw["files"]}


def test_export_records_secret_kinds_per_snapshot_and_keeps_the_bytes(repo: Repo) -> None:
    secret_files(repo)
    res = cli("export", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    out = res.json()
    pkg = Path(out["data"]["path"])
    files = _manifest(pkg)
    assert files["config/.env.local"]["secrets"] == ["dotenv-assignment"]
    assert files["notes/todo.md"]["secrets"] == ["github-pat"]
    assert files["assets/blob.bin"]["secrets"] == []
    assert files["notes/plain.txt"]["secrets"] == []
    for rel in files:
        assert (pkg / "untracked" / rel).read_bytes() == (repo.path / rel).read_bytes()
    flagged = {p["path"] for p in out["problems"] if p["code"] == "untracked_secret"}
    assert flagged == {"config/.env.local", "notes/todo.md"}
    human = cli("export", cwd=repo.path)
    assert "notes/todo.md" in human.stdout + human.stderr
    assert "--allow-secrets" in human.stdout + human.stderr


def test_validate_warns_and_stays_valid(repo: Repo) -> None:
    secret_files(repo)
    pid = cli("export", "--json", cwd=repo.path).json()["data"]["package_id"]
    res = cli("validate", pid, "--json", cwd=repo.path)
    assert res.returncode == 0, res.stdout
    env = res.json()
    assert env["data"]["valid"] is True
    warned = {p["path"]: p["severity"] for p in env["problems"] if p["code"] == "untracked_secret"}
    assert warned == {"config/.env.local": "warning", "notes/todo.md": "warning"}


def test_a_manifest_without_the_field_is_still_scanned(repo: Repo) -> None:
    """A package from before the field (or with it emptied) is re-scanned, not trusted."""
    secret_files(repo)
    pkg = Path(cli("export", "--json", cwd=repo.path).json()["data"]["path"])
    raw = json.loads((pkg / "untracked_manifest.json").read_text())
    for f in raw["files"]:
        del f["secrets"]
    (pkg / "untracked_manifest.json").write_text(json.dumps(raw))
    reseal(pkg)
    env = cli("validate", str(pkg), "--json", cwd=repo.path).json()
    errors = [p["code"] for p in env["problems"] if p["severity"] == "error"]
    assert errors == ["provenance_mismatch"]  # edited since export; its secrets still found
    assert {p["path"] for p in env["problems"] if p["code"] == "untracked_secret"} == {
        "config/.env.local",
        "notes/todo.md",
    }
