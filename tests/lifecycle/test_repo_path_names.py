"""A repository whose own directory name ends in a space or holds a newline (and unicode)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import clean_env, cli, make_repo


@pytest.mark.parametrize("name", ["trailing space ", "new\nline é"], ids=["space", "newline"])
def test_every_command_finds_the_same_repository_whatever_its_directory_name(
    tmp_path: Path, name: str
) -> None:
    decoy = tmp_path / name.rstrip()  # where a stripped path would land
    if name != name.rstrip():
        decoy.mkdir()
    repo = make_repo(tmp_path / name)
    repo.write("sub/new.txt", "x\n")
    exp = cli("export", "--json", cwd=repo.path / "sub")
    assert exp.returncode == 0, exp.stderr
    pkg = Path(exp.json()["data"]["path"])
    assert pkg.parent.parent.parent == repo.path
    listed = cli("packages", "list", "--json", cwd=repo.path / "sub").json()
    assert [r["package_id"] for r in listed["data"]["packages"]] == [pkg.name]
    res = cli("resume", "--strict", "--json", cwd=repo.path / "sub")
    assert res.returncode == 0, res.stderr
    inst = cli("hooks", "install", "--git", cwd=repo.path)
    assert inst.returncode == 0, inst.stderr
    assert (repo.path / ".git" / "hooks" / "pre-commit").is_file()
    repo.git("add", "sub/new.txt")
    done = subprocess.run(["git", "commit", "-qm", "c"], cwd=repo.path / "sub", env=clean_env(),
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0 and "checkpoint skipped" not in done.stderr, done.stderr
    assert "contextfork-checkpoint" in repo.git("notes", "--ref=contextfork", "show", "HEAD")
    if name != name.rstrip():
        assert not any(decoy.iterdir())
