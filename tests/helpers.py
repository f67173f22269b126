"""Real git repositories and real CLI subprocesses for tests (no mocks of git).

pytest-git's ``git_repo`` fixture warns on pytest 9 and fails under ``-W error`` (our setting),
so this small helper replaces it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TRANSCRIPTS = SHARED_DATA / "transcripts"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    env["HOME"] = env.get("CONTEXTFORK_TEST_HOME", env.get("HOME", "/tmp"))
    if extra:
        env.update(extra)
    return env


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=clean_env(), input=input, capture_output=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", errors="replace").strip()


@dataclass
class Repo:
    """A real git repository in tmp_path with helpers to write, commit and inspect it."""

    path: Path

    def write(self, rel: str, data: str | bytes, mode: int | None = None) -> Path:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            p.write_bytes(data.encode("utf-8"))
        else:
            p.write_bytes(data)
        if mode is not None:
            p.chmod(mode)
        return p

    def git(self, *args: str, check: bool = True, input: bytes | None = None) -> str:
        return git(self.path, *args, check=check, input=input)

    def commit_all(self, message: str = "commit") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def conflicting_merge(self, rel: str = "README.md") -> None:
        """Leave a merge in progress with ``rel`` conflicted (ours and theirs both edited it)."""
        self.git("checkout", "-q", "-b", "other")
        self.write(rel, f"# {rel}: theirs\n")
        self.commit_all("theirs")
        self.git("checkout", "-q", "main")
        self.write(rel, f"# {rel}: ours\n")
        self.commit_all("ours")
        self.git("merge", "-q", "other", check=False)

    @property
    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


def make_repo(
    path: Path, *, files: dict[str, str | bytes] | None = None, commit: bool = True
) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "author@example.com")
    git(path, "config", "user.name", "Test Author")
    git(path, "config", "commit.gpgsign", "false")
    repo = Repo(path)
    if files is None and commit:
        files = {"README.md": "# demo\n", "src/app.py": "def main():\n    return 1\n"}
    for rel, data in (files or {}).items():
        repo.write(rel, data)
    if commit:
        repo.commit_all("initial")
    return repo


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> CliResult:
    """Run ``contextfork`` as a real subprocess (``python -m contextfork``)."""
    proc = subprocess.run(
        [sys.executable, "-m", "contextfork", *args],
        cwd=cwd,
        env=clean_env(env),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def npm_package(spec: str, wanted: str) -> tuple[Path | None, str]:
    """``npm install spec`` once into the shared cache (~/.cache/contextfork-npm, or
    $CONTEXTFORK_NPM_CACHE) and the path of ``wanted`` inside its prefix; (None, why) when npm
    is missing or the install fails. xdist workers share the cache, so a file lock makes one
    install while the others wait and then reuse it."""
    import shutil

    from filelock import FileLock

    base = os.environ.get("CONTEXTFORK_NPM_CACHE") or str(
        Path.home() / ".cache" / "contextfork-npm"
    )
    prefix = Path(base) / spec.replace("@", "-")
    target = prefix / wanted
    npm = shutil.which("npm")
    if not target.exists() and npm is None:
        return None, f"{spec} needs npm (not found)"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(prefix.parent / f"{prefix.name}.lock"), timeout=600):
        if not target.exists():
            prefix.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run(
                [str(npm), "install", "--prefix", str(prefix), "--no-audit", "--no-fund", spec],
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            if proc.returncode != 0 or not target.exists():
                return None, f"npm install {spec} failed: {proc.stderr.strip()[-200:]}"
    return target, ""


def cli(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    env: dict[str, str] | None = None,
    environ: dict[str, str] | None = None,
) -> CliResult:
    """``contextfork`` in this process: what ``run_cli`` does without the ~0.5 s interpreter
    start and imports per call. For tests where the process boundary is not the point (the
    hooks, the status line and the entry points keep ``run_cli``). The cwd, environment
    (``clean_env``, or exactly ``environ``), stdin, stdout and stderr are swapped for the call
    and put back after."""
    import contextlib
    import io

    from contextfork.entry import main

    def stream(data: bytes = b"") -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="")

    out, err = stream(), stream()
    saved_env, saved_cwd, saved_in = dict(os.environ), os.getcwd(), sys.stdin
    call_env = environ if environ is not None else clean_env(env)  # before os.environ is cleared
    try:
        os.environ.clear()
        os.environ.update(call_env)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = stream((input or "").encode("utf-8"))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        sys.stdin = saved_in
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)

    def text(s: io.TextIOWrapper) -> str:
        s.flush()
        buf = s.buffer
        assert isinstance(buf, io.BytesIO)
        return buf.getvalue().decode("utf-8", errors="replace")

    return CliResult(code, text(out), text(err))


def clones_of_one_remote(tmp_path: Path) -> tuple[Path, Repo, Repo]:
    """A bare remote and two clones of it with an author set: two machines sharing through git."""
    origin = make_repo(
        tmp_path / "seed", files={"README.md": "# shared\n", "src/app.py": "x = 1\n"}
    )
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin.path), str(remote))
    clones = []
    for name in ("a", "b"):
        git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
        r = Repo(tmp_path / name)
        r.git("config", "user.email", "author@example.com")
        r.git("config", "user.name", "Test Author")
        clones.append(r)
    return remote, clones[0], clones[1]


def ssh_key(where: Path, name: str) -> tuple[Path, str]:
    """A new ed25519 key pair for git's ssh signing: (private key file, public key line)."""
    key = where / "keys" / name
    key.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
                   check=True, capture_output=True)  # fmt: skip
    return key, key.with_suffix(".pub").read_text().strip()


def sign_with(repo: Repo, key: Path) -> None:
    """Commits (and so pushed packages) in ``repo`` are signed with ``key``."""
    repo.git("config", "gpg.format", "ssh")
    repo.git("config", "user.signingkey", str(key))
    repo.git("config", "commit.gpgsign", "true")


def trust_keys(repo: Repo, where: Path, *pubs: str) -> None:
    """``repo`` verifies ssh signatures against exactly ``pubs`` (an allowed signers file)."""
    signers = where / f"allowed_signers_{repo.path.name}"
    signers.write_text("".join(f"author@example.com {p}\n" for p in pubs))
    repo.git("config", "gpg.format", "ssh")
    repo.git("config", "gpg.ssh.allowedSignersFile", str(signers))


def count_parses(monkeypatch: Any, path: Path) -> list[bool | None]:
    """The ``include_subagents`` of every real parse of ``path`` from now on (a held session
    handed back by ``load_session`` is not a parse)."""
    import contextfork.transcript as transcript_mod

    real, reads = transcript_mod._load, []

    def counting(p: Path, **kw: Any) -> Any:
        if p == path:
            reads.append(kw.get("include_subagents"))
        return real(p, **kw)

    monkeypatch.setattr(transcript_mod, "_load", counting)
    return reads
