from __future__ import annotations

import json

import jsonschema

from contextfork.lifecycle import githooks
from contextfork.lifecycle.admin import clean
from contextfork.package import store
from contextfork.package.export import ExportOptions, export
from contextfork.resources import load_schema
from contextfork.resume.api import resume
from contextfork.resume.state import state_path
from tests.helpers import Repo, cli


def _three(repo: Repo) -> list[str]:
    return [export(repo.path, ExportOptions(goal=f"g{i}")).package_id for i in range(3)]


def test_packages_list_shows_id_created_trigger_head_consumed_and_size(repo: Repo) -> None:
    ids = _three(repo)
    resume(repo.path, ids[0], session_id="s-9")
    res = cli("packages", "list", "--json", cwd=repo.path)
    assert res.returncode == 0
    rows = res.json()["data"]["packages"]
    assert [r["package_id"] for r in rows] == ids
    first = rows[0]
    assert first["trigger"] == "cli" and first["head"] == repo.head and first["size"] > 0
    assert first["created_at"] and first["consumed"] and first["consumed_by"] == "s-9"
    assert not rows[1]["consumed"]
    human = cli("packages", "list", cwd=repo.path).stdout
    assert ids[0] in human and "consumed by s-9" in human


def test_packages_show_prints_the_manifest_and_the_handoff(repo: Repo) -> None:
    pid = _three(repo)[1]
    res = cli("packages", "show", pid, cwd=repo.path)
    assert res.returncode == 0
    assert '"package_sha256"' in res.stdout and "## 1. Active Goal & Scope" in res.stdout
    assert "g1" in res.stdout
    data = cli("packages", "show", pid, "--json", cwd=repo.path).json()["data"]
    assert data["handoff"]["active_goal"]["goal"] == "g1" and data["manifest"]["package_id"] == pid


def test_packages_clean_is_a_dry_run_unless_yes(repo: Repo) -> None:
    ids = _three(repo)
    for pid in ids:
        resume(repo.path, pid)
    res = cli("packages", "clean", "--keep", "1", "--json", cwd=repo.path).json()
    assert res["data"]["dry_run"] and res["data"]["would_remove"] == ids[:2]
    assert [r.package_id for r in store.list_packages(repo.path)] == ids
    res = cli("packages", "clean", "--keep", "1", "--yes", cwd=repo.path)
    assert res.returncode == 0
    assert [r.package_id for r in store.list_packages(repo.path)] == ids[2:]
    pkgs = store.packages_dir(repo.path)
    assert not state_path(pkgs / ids[0]).exists() and state_path(pkgs / ids[2]).exists()


def test_packages_clean_never_removes_an_unconsumed_package_without_force(repo: Repo) -> None:
    ids = _three(repo)
    resume(repo.path, ids[0])
    out = clean(repo.path, keep=0, yes=True, force=False)
    assert out.data["removed"] == [ids[0]] and out.data["kept_unconsumed"] == ids[1:]
    assert "kept_unconsumed" in {p.code for p in out.problems}
    out = clean(repo.path, keep=0, yes=True, force=True)
    assert out.data["removed"] == ids[1:] and store.list_packages(repo.path) == []


def test_consumed_state_and_hook_config_match_their_schemas(repo: Repo) -> None:
    pid = _three(repo)[0]
    resume(repo.path, pid, session_id="s")
    state = json.loads(state_path(store.packages_dir(repo.path) / pid).read_text())
    jsonschema.Draft202012Validator(load_schema("consumed-state.schema.json")).validate(state)
    githooks.install(repo.path, keep=3)
    cfg = json.loads((repo.path / ".contextfork" / "git-hooks.json").read_text())
    jsonschema.Draft202012Validator(load_schema("git-hooks-config.schema.json")).validate(cfg)
    assert cfg["keep_checkpoints"] == 3 and len(cfg["hooks"]) == 2


def test_lifecycle_json_output_matches_the_envelope_schema(repo: Repo) -> None:
    _three(repo)
    validator = jsonschema.Draft202012Validator(load_schema("envelope.schema.json"))
    for args in (["resume", "--json"], ["packages", "list", "--json"], ["log", "--json"],
                 ["packages", "clean", "--json"], ["resume", "nope", "--json"]):
        validator.validate(cli(*args, cwd=repo.path).json())
