"""GitPython as an independent oracle: what export records must agree with another git reader.

Our own git layer (contextfork.gitstate) parses porcelain output; a bug there would be invisible
to tests that read the result back through the same layer. GitPython reads the same repository
through its own code (index file parser, object database), so the two can disagree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git as gitpython

from tests.helpers import Repo, run_cli


def _export(repo: Repo) -> Path:
    result = run_cli("export", "--goal", "oracle check", "--json", cwd=repo.path)
    assert result.returncode == 0, result.stderr
    return Path(result.json()["data"]["path"])


def test_export_status_agrees_with_gitpython(repo: Repo) -> None:
    repo.write("src/app.py", "def main():\n    return 2\n")  # unstaged modification
    repo.write("src/new.py", "x = 1\n")
    repo.git("add", "src/new.py")  # staged addition
    repo.write("notes/todo.txt", "later\n")  # untracked
    (repo.path / "README.md").unlink()  # unstaged deletion
    pkg = _export(repo)
    status = json.loads((pkg / "git_status.json").read_text(encoding="utf-8"))

    with gitpython.Repo(repo.path) as oracle:
        _check_status(status, oracle)


def _check_status(status: dict[str, Any], oracle: gitpython.Repo) -> None:
    assert status["head"] == oracle.head.commit.hexsha
    assert status["branch"] == oracle.active_branch.name
    assert sorted(status["untracked"]) == sorted(oracle.untracked_files)
    staged = {d.a_path for d in oracle.index.diff("HEAD")}
    assert set(status["staged"]) == staged == {"src/new.py"}
    unstaged = {d.a_path: d.change_type for d in oracle.index.diff(None)}
    assert set(status["modified"]) == {p for p, t in unstaged.items() if t == "M"}
    assert set(status["deleted"]) == {p for p, t in unstaged.items() if t == "D"}


def test_exported_tree_sha_is_the_tree_gitpython_builds(repo: Repo) -> None:
    repo.write("src/app.py", "def main():\n    return 3\n")
    repo.write("docs/guide.md", "# guide\n")
    pkg = _export(repo)
    meta = json.loads((pkg / "session_metadata.json").read_text(encoding="utf-8"))
    recorded = meta["worktree_tree_sha"]

    # Build the worktree's tree with GitPython's own index writer, in a scratch index file.
    with gitpython.Repo(repo.path) as oracle:
        scratch = gitpython.IndexFile.from_tree(oracle, oracle.head.commit.tree)
        scratch.add(["src/app.py", "docs/guide.md"])
        try:
            assert scratch.write_tree().hexsha == recorded
        finally:
            Path(scratch.path).unlink(missing_ok=True)
