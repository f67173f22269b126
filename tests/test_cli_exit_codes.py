"""Every failure path of the CLI exits with its named code (README "Exit codes") and says why in
one line on stderr, never a traceback; with ``--json`` the same code is in the envelope.

One row per error class of ``contextfork.errors`` (plus click's own usage errors and a bare
``ContextforkError``): a new class, or a new code, makes ``test_the_table_covers_...`` fail
until it has a row here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from contextfork import errors
from contextfork.errors import ExitCode
from contextfork.provenance import forget_package
from tests.helpers import Repo, cli, make_repo


@dataclass(frozen=True)
class Case:
    """``setup`` prepares ``repo`` and returns the arguments of the failing command."""

    name: str
    setup: Callable[[Repo, Path], list[str]]
    code: ExitCode
    raised: str  # the class in contextfork.errors this path raises ("" for click's own)
    says: str  # a fragment of the one stderr line
    json: bool = True  # the command takes --json
    broken: str = ""  # a module the run cannot import (None in sys.modules), as a broken install


def _folded(repo: Repo) -> Path:
    assert cli("fold", "add", "1", "first", input="a", cwd=repo.path).returncode == 0
    return repo.path / ".contextfork" / "cold" / "default" / "cold_nodes" / "step_000001.json"


def _exported(repo: Repo) -> str:
    res = cli("export", "--goal", "ship it", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    return str(res.json()["data"]["package_id"])


def _step_conflict(repo: Repo, tmp: Path) -> list[str]:
    _folded(repo)
    return ["fold", "add", "1", "first"]  # the same step, another payload (stdin is empty)


def _git_refused(repo: Repo, tmp: Path) -> list[str]:
    return ["pull", "nosuch"]


def _bad_step(repo: Repo, tmp: Path) -> list[str]:
    return ["fold", "show", "../x"]


def _unknown_option(repo: Repo, tmp: Path) -> list[str]:
    return ["fold", "show", "--nope"]


def _unknown_command(repo: Repo, tmp: Path) -> list[str]:
    return ["nosuchcommand"]


def _tampered_node(repo: Repo, tmp: Path) -> list[str]:
    node = _folded(repo)
    data = json.loads(node.read_bytes())
    data["content"] = "tampered"
    node.write_text(json.dumps(data))
    return ["fold", "show", "1"]


def _symlinked_state_dir(repo: Repo, tmp: Path) -> list[str]:
    (tmp / "elsewhere").mkdir()
    os.symlink(tmp / "elsewhere", repo.path / ".contextfork")
    return ["fold", "status"]


def _unprovenanced_package(repo: Repo, tmp: Path) -> list[str]:
    pid = _exported(repo)
    forget_package(repo.path, pid)  # as if it arrived by a plain copy or a git checkout
    return ["resume", pid]


def _missing_step(repo: Repo, tmp: Path) -> list[str]:
    _folded(repo)
    return ["fold", "show", "7"]


def _not_a_repo(repo: Repo, tmp: Path) -> list[str]:
    (tmp / "plain").mkdir()
    return ["status", "--repo", str(tmp / "plain")]


def _missing_transcript(repo: Repo, tmp: Path) -> list[str]:
    return ["status", "--transcript", str(tmp / "gone.jsonl")]


def _head_moved(repo: Repo, tmp: Path) -> list[str]:
    pid = _exported(repo)
    repo.write("later.txt", "after the export\n")
    repo.commit_all("later")
    return ["resume", pid, "--apply"]


def _strict_drift(repo: Repo, tmp: Path) -> list[str]:
    _exported(repo)
    repo.write("later.txt", "after the export\n")
    return ["resume", "--strict"]


def _no_redaction(repo: Repo, tmp: Path) -> list[str]:
    repo.write("notes.txt", "untracked\n")
    return ["export", "--goal", "ship it"]


def _os_error(repo: Repo, tmp: Path) -> list[str]:
    return ["status", "--repo", str(tmp / ("x" * 300))]  # the OS refuses the name (ENAMETOOLONG)


CASES = [
    Case("a step id folded twice", _step_conflict, ExitCode.CHECK_FAILED, "CheckFailed",
         "already holds a different payload"),
    Case("git refuses", _git_refused, ExitCode.CHECK_FAILED, "GitError",
         "git fetch --quiet failed: fatal: 'nosuch' does not appear to be a git repository"),
    Case("a bad step id", _bad_step, ExitCode.USAGE, "UsageError", "step '../x' is not a number"),
    Case("an unknown option", _unknown_option, ExitCode.USAGE, "", "No such option: --nope",
         json=False),
    Case("an unknown command", _unknown_command, ExitCode.USAGE, "",
         "No such command 'nosuchcommand'", json=False),
    Case("a tampered node", _tampered_node, ExitCode.INTEGRITY, "IntegrityError",
         "payload_sha256 does not match the stored bytes (tampered)"),
    Case("a symlinked .contextfork", _symlinked_state_dir, ExitCode.INTEGRITY, "UnsafeStateDir",
         ".contextfork is a symlink"),
    Case("redaction cannot load", _no_redaction, ExitCode.INTEGRITY, "RedactionUnavailable",
         "secret redaction cannot load", broken="contextfork.redact"),
    Case("a package nobody made here", _unprovenanced_package, ExitCode.INTEGRITY,
         "NotProvenanced", "--trust"),
    Case("a step not in the store", _missing_step, ExitCode.NOT_FOUND, "NotFoundError",
         "step 7 is not in cold store 'default'"),
    Case("not a repository", _not_a_repo, ExitCode.NOT_FOUND, "NotFoundError",
         "not a git repository"),
    Case("a missing transcript", _missing_transcript, ExitCode.NOT_FOUND, "NotFoundError",
         "transcript not found"),
    Case("apply on another HEAD", _head_moved, ExitCode.DRIFT, "DriftError",
         "is not the recorded HEAD"),
    Case("--strict on a drifted repo", _strict_drift, ExitCode.DRIFT, "",
         "drift: the live repository drifted from the package"),
    Case("an OS error", _os_error, ExitCode.CHECK_FAILED, "ContextforkError", "File name too long"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_failure_exits_with_its_code_and_one_line(
    case: Case, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = case.setup(repo, tmp_path)
    if case.broken:
        monkeypatch.setitem(sys.modules, case.broken, None)
    res = cli(*args, cwd=repo.path)
    assert res.returncode == case.code, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and case.says in lines[0], res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    if case.json:
        env = cli(*args, "--json", cwd=repo.path)
        assert env.returncode == case.code
        data = env.json()
        assert data["ok"] is False and data["exit_code"] == case.code
        assert "Traceback" not in env.stderr


def test_the_table_covers_every_exit_code_and_error_class() -> None:
    assert {c.code for c in CASES} == set(ExitCode) - {ExitCode.OK}
    family = {name for name, obj in vars(errors).items()
              if isinstance(obj, type) and issubclass(obj, errors.ContextforkError)}
    assert family == {c.raised for c in CASES} - {""}


def test_the_readme_documents_the_codes_the_errors_use() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {int(code)} | {code.name} |" in readme


def test_a_plain_subprocess_failure_is_the_same_line(tmp_path: Path) -> None:
    """The process boundary once: what a script sees (in-process ``cli`` is the same code)."""
    from tests.helpers import run_cli

    repo = make_repo(tmp_path / "r")
    res = run_cli("fold", "show", "../x", cwd=repo.path)
    assert res.returncode == ExitCode.USAGE
    assert res.stderr == ("contextfork fold show: error: step '../x' is not a number "
                          "(use e.g. 12 or step_000012)\n")
