"""The pre-commit framework runs our checkpoint hook.

pre-commit installs a `repo:` (even a local path) by building a virtualenv and `pip install .`:
that needs the build backend (hatchling) and every dependency from an index, so it cannot work
offline. The offline test therefore runs the real `pre-commit` tool with `repo: local` /
`language: system` and the hook definitions copied from our `.pre-commit-hooks.yaml` (which
pre-commit's own loader validates); the install-from-a-path test runs only with
CONTEXTFORK_NETWORK_TESTS=1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contextfork.package import store
from tests.helpers import Repo, clean_env, git

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which(
    "pre-commit"
)
pytestmark = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")


def _pc(repo: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT
    return subprocess.run([PRE_COMMIT, *args], cwd=repo, env=clean_env({"PRE_COMMIT_HOME": str(home)}),
                          capture_output=True, text=True, check=False, timeout=600)


def _manifest() -> list[dict[str, object]]:
    from pre_commit.clientlib import load_manifest

    return list(load_manifest(str(ROOT / ".pre-commit-hooks.yaml")))


def _commit(repo: Repo) -> subprocess.CompletedProcess[str]:
    repo.write("f.txt", "change\n")
    repo.git("add", "f.txt")
    return subprocess.run(["git", "commit", "-m", "via pre-commit"], cwd=repo.path, env=clean_env(),
                          capture_output=True, text=True, check=False)


def test_pre_commit_hooks_yaml_is_a_valid_manifest_with_the_checkpoint_id() -> None:
    hooks = {h["id"]: h for h in _manifest()}
    cp = hooks["contextfork-checkpoint"]
    assert cp["language"] == "python" and cp["always_run"] and cp["pass_filenames"] is False
    assert cp["entry"] == "contextfork git-hook pre-commit"


def test_pre_commit_framework_runs_the_checkpoint_hook_and_the_note(repo: Repo, tmp_path: Path) -> None:
    hooks = {h["id"]: h for h in _manifest()}
    lines = ["repos:", "  - repo: local", "    hooks:"]
    for hid in ("contextfork-checkpoint", "contextfork-checkpoint-note"):
        h = hooks[hid]
        entry = str(h["entry"]).replace("contextfork", f"{sys.executable} -m contextfork", 1)
        lines += [f"      - id: {hid}", f"        name: {h['name']}", f"        entry: {entry}",
                  "        language: system", "        always_run: true",
                  "        pass_filenames: false", f"        stages: {h['stages']}"]
    repo.write(".pre-commit-config.yaml", "\n".join(lines) + "\n")
    repo.commit_all("config")
    home = tmp_path / "pc-home"
    res = _pc(repo.path, "install", "-t", "pre-commit", "-t", "post-commit", home=home)
    assert res.returncode == 0, res.stdout + res.stderr
    proc = _commit(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "contextfork checkpoint" in proc.stdout + proc.stderr
    refs = store.list_packages(repo.path)
    assert len(refs) == 1
    assert refs[0].package_id in repo.git("notes", "--ref=contextfork", "show", "HEAD")


@pytest.mark.skipif(os.environ.get("CONTEXTFORK_NETWORK_TESTS") != "1",
                    reason="pre-commit builds the hook's venv with pip: needs a package index")
def test_pre_commit_installs_the_hook_from_a_clone_of_this_project(repo: Repo, tmp_path: Path) -> None:
    clone = tmp_path / "hookrepo"
    git(tmp_path, "clone", "-q", str(ROOT), str(clone))
    rev = git(clone, "rev-parse", "HEAD")
    repo.write(".pre-commit-config.yaml", f"repos:\n  - repo: {clone}\n    rev: {rev}\n"
               "    hooks:\n      - id: contextfork-checkpoint\n")
    repo.commit_all("config")
    home = tmp_path / "pc-home"
    assert _pc(repo.path, "install", home=home).returncode == 0
    proc = _commit(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(store.list_packages(repo.path)) == 1
