from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import Repo, clean_env, make_repo


def exactness_repo(path: Path) -> Repo:
    """Every change kind the reference implementation mangles."""
    repo = make_repo(
        path,
        files={
            "crlf.txt": b"one\r\ntwo\r\n",
            "latin1.txt": "caf\xe9\n".encode("latin-1"),
            "image.bin": bytes(range(256)) * 8,
            "a.py": "print('a')\n",
            "gone.txt": "bye\n",
            "script.sh": "#!/bin/sh\necho hi\n",
            "both.py": "x = 1\n",
            "docs/keep.md": "# keep\n",
            ".gitignore": ".env\nbuild/\n",
        },
    )
    repo.write("crlf.txt", b"one\r\ntwo changed\r\nthree\r\n")
    repo.write("latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    repo.write("image.bin", bytes(reversed(range(256))) * 8 + b"\x00tail")
    repo.git("mv", "a.py", "b c.py")
    repo.git("mv", "docs/keep.md", "docs/ünïcödé name.md")
    (repo.path / "gone.txt").unlink()
    os.chmod(repo.path / "script.sh", 0o755)
    repo.write("both.py", "x = 2\n")
    repo.git("add", "both.py")
    repo.write("both.py", "x = 3\n")
    repo.write("new/untracked.txt", "fresh\n")
    repo.write("new/data.bin", b"\x00\xff\x10binary")
    repo.write("new/.env", "API_KEY=leak\n")  # ignored by pattern in an untracked dir
    repo.write(".env", "SECRET=1\n")
    repo.write("build/out.o", b"\x7fELF")
    return repo


@pytest.fixture
def exact_repo(tmp_path: Path) -> Repo:
    return exactness_repo(tmp_path / "repo")


def tree_sha_of(path: Path) -> str:
    """Tree SHA of a work tree via a temporary index (add -A, write-tree)."""
    idx = path / ".git" / "tmp-test-index"
    env = clean_env({"GIT_INDEX_FILE": str(idx)})
    subprocess.run(["git", "add", "-A"], cwd=path, env=env, check=True)
    out = subprocess.run(
        ["git", "write-tree"], cwd=path, env=env, check=True, capture_output=True, text=True
    )
    idx.unlink()
    return out.stdout.strip()
