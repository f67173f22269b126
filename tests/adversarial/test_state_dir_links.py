"""A repo that commits `.contextfork` (or a part of it) as a symlink or a file cannot make us
read, write or delete outside it: every command refuses with one line and exit 3, hooks stay
fail-open but write nothing, and the foreign directory is byte-for-byte untouched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextfork.lifecycle import githooks
from tests.helpers import Repo, cli

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _snapshot(d: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(d)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(d.rglob("*"))
    }


def _foreign(tmp_path: Path) -> Path:
    """A directory outside the repo that looks like a .contextfork with 4 packages in it."""
    d = tmp_path / "foreign"
    for i in range(4):
        (d / "packages" / f"20200101T00000{i}000Z-aaaaa{i}").mkdir(parents=True)
        (d / "packages" / f"20200101T00000{i}000Z-aaaaa{i}" / "precious.txt").write_text("keep\n")
    (d / "cold").mkdir()
    return d


def _one_line_refusal(res: object, what: str = ".contextfork") -> None:
    assert res.returncode == 3, (res.returncode, res.stdout, res.stderr)  # type: ignore[attr-defined]
    err = res.stderr.strip()  # type: ignore[attr-defined]
    assert len(err.splitlines()) <= 2 and what in err and "Traceback" not in err, err


@pytest.mark.parametrize("kind", ["symlink", "packages-symlink", "file"])
def test_export_refuses_a_contextfork_that_is_not_a_real_directory(
    repo: Repo, tmp_path: Path, kind: str
) -> None:
    foreign = _foreign(tmp_path)
    before = _snapshot(foreign)
    if kind == "symlink":
        (repo.path / ".contextfork").symlink_to(foreign)
    elif kind == "packages-symlink":
        (repo.path / ".contextfork").mkdir()
        (repo.path / ".contextfork" / "packages").symlink_to(foreign / "packages")
    else:
        (repo.path / ".contextfork").write_text("not a directory\n")
    res = cli("export", cwd=repo.path)
    _one_line_refusal(res)
    res = cli("export", "--json", cwd=repo.path)
    assert res.returncode == 3 and res.json()["ok"] is False
    assert _snapshot(foreign) == before


def test_packages_clean_never_deletes_through_a_symlinked_contextfork(
    repo: Repo, tmp_path: Path
) -> None:
    foreign = _foreign(tmp_path)
    before = _snapshot(foreign)
    (repo.path / ".contextfork").symlink_to(foreign)
    res = cli("packages", "clean", "--keep", "0", "--yes", "--force", cwd=repo.path)
    _one_line_refusal(res)
    for cmd in (["packages", "list"], ["resume"], ["validate"], ["push", "origin"]):
        assert cli(*cmd, cwd=repo.path).returncode == 3, cmd
    assert _snapshot(foreign) == before


def test_a_committed_contextfork_symlink_gets_no_checkpoint_written_through_it(
    repo: Repo, tmp_path: Path
) -> None:
    githooks.install(repo.path)
    foreign = _foreign(tmp_path)
    before = _snapshot(foreign)
    import shutil

    shutil.rmtree(repo.path / ".contextfork")
    (repo.path / ".contextfork").symlink_to(foreign)
    repo.write("src/app.py", "x = 2\n")
    repo.git("add", "src/app.py", ".contextfork")
    repo.git("commit", "-q", "-m", "commit a symlinked .contextfork")
    assert repo.git("ls-files", "-s", ".contextfork").startswith("120000")
    assert _snapshot(foreign) == before


def test_fold_and_hooks_never_write_through_a_symlinked_cold_dir(repo: Repo, tmp_path: Path) -> None:
    foreign = _foreign(tmp_path)
    (repo.path / ".contextfork").mkdir()
    (repo.path / ".contextfork" / "cold").symlink_to(foreign / "cold")
    before = _snapshot(foreign)
    res = cli("fold", "add", "1", "a step", "--session", "s1", cwd=repo.path, input="payload")
    _one_line_refusal(res)
    payload = {"session_id": "s1", "cwd": str(repo.path), "hook_event_name": "UserPromptSubmit",
               "prompt": "what about step 1", "transcript_path": str(tmp_path / "none.jsonl")}  # fmt: skip
    res = cli("hook", "user-prompt-submit", cwd=repo.path, input=json.dumps(payload))
    assert res.returncode == 0 and res.stdout == ""
    assert _snapshot(foreign) == before


def test_mcp_export_refuses_a_symlinked_contextfork(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from contextfork.harness.mcp import server as mcp_server

    foreign = _foreign(tmp_path)
    before = _snapshot(foreign)
    (repo.path / ".contextfork").symlink_to(foreign)
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    monkeypatch.chdir(repo.path)
    with pytest.raises(ToolError, match=r"\.contextfork"):
        mcp_server.export_session_context(str(repo.path))
    with pytest.raises(ToolError, match=r"\.contextfork"):
        mcp_server.clean_session_context(str(repo.path), keep=0, confirm=True, force=True)
    assert _snapshot(foreign) == before
    assert os.path.islink(repo.path / ".contextfork")


def test_a_symlinked_hook_log_is_never_appended_to(repo: Repo, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    (repo.path / ".contextfork" / "logs").mkdir(parents=True)
    (repo.path / ".contextfork" / "logs" / "hooks.log").symlink_to(victim)
    res = cli("hook", "user-prompt-submit", cwd=repo.path, input="{not json")
    assert res.returncode == 0
    assert victim.read_text() == "untouched\n"
