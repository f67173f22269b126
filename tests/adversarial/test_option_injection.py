"""Option injection through git operands (issue 22, item 3).

A remote name, a ref or a revision that begins with ``-`` reaches git as an option unless the
call separates options from operands: ``contextfork pull -- '--upload-pack=touch P'`` used to
run the program. Every command that takes a remote is driven here with the three git options
that run a program; each must refuse with one line (usage, exit 2) and run nothing. A hostile
package that records ``-``-leading revisions must not smuggle options into git either.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork import gitstate
from contextfork.errors import UsageError
from tests.helpers import Repo, clones_of_one_remote, run_cli

_PROGRAM_OPTIONS = ("--upload-pack={cmd}", "--receive-pack={cmd}", "--exec={cmd}")
_COMMANDS = (("push",), ("pull",), ("fold", "push"), ("fold", "pull"))


def _cmd(marker: Path) -> str:
    return f"touch {marker}"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Repo, Repo]:
    return clones_of_one_remote(tmp_path_factory.mktemp("inject"))


@pytest.mark.parametrize("command", _COMMANDS, ids=lambda c: "-".join(c))
@pytest.mark.parametrize("option", _PROGRAM_OPTIONS, ids=lambda o: o.split("=")[0].strip("-"))
def test_a_remote_name_that_starts_with_a_dash_is_refused_and_runs_nothing(
    shared: tuple[Path, Repo, Repo], tmp_path: Path, command: tuple[str, ...], option: str
) -> None:
    _remote, a, _b = shared
    marker = tmp_path / "pwned"
    res = run_cli(*command, "--", option.format(cmd=_cmd(marker)), cwd=a.path)
    assert not marker.exists(), f"{' '.join(command)} ran the injected program"
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "remote" in lines[0] and "-" in lines[0]
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("command", _COMMANDS, ids=lambda c: "-".join(c))
def test_a_remote_name_with_a_newline_or_nul_is_refused(
    shared: tuple[Path, Repo, Repo], command: tuple[str, ...]
) -> None:
    _remote, a, _b = shared
    res = run_cli(*command, "origin\n--upload-pack=x", cwd=a.path)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr


def test_a_plain_remote_name_and_a_path_still_work(shared: tuple[Path, Repo, Repo]) -> None:
    remote, a, _b = shared
    assert run_cli("pull", "origin", cwd=a.path).returncode == 0
    assert run_cli("pull", str(remote), cwd=a.path).returncode == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda root: gitstate.commit_exists(root, "--output=/tmp/x"),
        lambda root: gitstate.resolve_commit(root, "--output=/tmp/x"),
        lambda root: gitstate.merge_base(root, "-x", "HEAD"),
        lambda root: gitstate.left_right_count(root, "-x", "HEAD"),
        lambda root: gitstate.unpushed_count(root, "--all", "origin"),
        lambda root: gitstate.ls_tree_all(root, "--format=%(path)"),
        lambda root: gitstate.fetch_refs(root, "--upload-pack=touch /tmp/x", "x"),
        lambda root: gitstate.push_refs(root, "--receive-pack=touch /tmp/x", ["x"]),
        lambda root: gitstate.ls_remote(root, "--upload-pack=touch /tmp/x", "refs/*"),
        lambda root: gitstate.push_verdicts(root, "--receive-pack=x", ["x"]),
    ],
    ids=["commit_exists", "resolve_commit", "merge_base", "left_right_count", "unpushed_count",
         "ls_tree_all", "fetch_refs", "push_refs", "ls_remote", "push_verdicts"],
)  # fmt: skip
def test_gitstate_refuses_an_operand_that_starts_with_a_dash(repo: Repo, call: object) -> None:
    assert callable(call)
    with pytest.raises(UsageError, match="begins with '-'"):
        call(repo.path)


def test_a_package_recording_a_dash_head_does_not_pass_options_to_git(
    repo: Repo, tmp_path: Path
) -> None:
    """resume/validate read the HEAD a package records; a hostile one gets one line, no option."""
    res = run_cli("export", "--goal", "g", "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    pkg_id = res.json()["data"]["package_id"]
    pkg = repo.path / ".contextfork" / "packages" / pkg_id
    status_file = pkg / "git_status.json"
    data = json.loads(status_file.read_text())
    data["head"] = "--output=" + str(tmp_path / "written")
    status_file.write_text(json.dumps(data))
    for args in (("validate", pkg_id), ("resume", pkg_id)):
        out = run_cli(*args, cwd=repo.path)
        assert out.returncode != 0
        assert "Traceback" not in out.stderr
    assert not (tmp_path / "written").exists()
