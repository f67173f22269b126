"""kill -9 at seeded random moments: export, fold, push and resume --apply.

After every SIGKILL (sent to the whole process group, so git children die too): no partial
package is visible, the user's HEAD, index and working tree are exactly as before, the stores
validate clean, and the next run succeeds. Delays are drawn from a seeded RNG over the span one
uninterrupted run takes, so the kills land in startup, in the middle and near the end (a run may still finish first
when the machine speeds up; that run is checked the same way).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from contextfork.cold import api as cold_api
from contextfork.hashing import sha256_bytes
from contextfork.package.validate import validate_package
from tests.harness import cc_fixture
from tests.helpers import Repo, clean_env, git, make_repo, run_cli

SEED = 1309
KILLS = 10
MIN_KILLS = 3


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "contextfork", *args], cwd=cwd,
                            env=clean_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _kill_after(args: list[str], cwd: Path, delay: float) -> int | None:
    """Run, SIGKILL the process group after ``delay`` s; the exit code if it finished first."""
    proc = _start(args, cwd)
    try:
        return proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return None


def _duration(args: list[str], cwd: Path) -> float:
    started = time.monotonic()
    proc = _start(args, cwd)
    assert proc.wait(timeout=120) == 0, f"{args} failed uninterrupted"
    return time.monotonic() - started


def _user_state(repo: Repo) -> tuple[str, ...]:
    """HEAD, the index entries, staged and unstaged diffs, untracked files and their bytes."""
    files = []
    for p in sorted(repo.path.rglob("*")):
        rel = p.relative_to(repo.path)
        if rel.parts[0] in (".git", ".contextfork") or not p.is_file() or p.is_symlink():
            continue
        files.append(f"{rel}:{sha256_bytes(p.read_bytes())}")
    return (
        repo.git("rev-parse", "HEAD"),
        repo.git("symbolic-ref", "-q", "HEAD", check=False),
        repo.git("ls-files", "-s"),
        repo.git("diff", "--cached", "--binary"),
        repo.git("diff", "--binary"),
        repo.git("ls-files", "--others", "--exclude-standard"),
        "\n".join(files),
    )


def _worktree_of(state: tuple[str, ...]) -> tuple[str, str]:
    return state[0], state[6]


def _worktree(repo: Repo) -> tuple[str, str]:
    return _worktree_of(_user_state(repo))


def _visible_packages(repo: Repo) -> list[Path]:
    base = repo.path / ".contextfork" / "packages"
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))


def _assert_packages_valid(repo: Repo, where: str) -> None:
    for pkg in _visible_packages(repo):
        v = validate_package(pkg, repo.path)
        assert v.exit_code == 0, f"{where}: partial package {pkg.name} visible: {v.errors[:2]}"


def _busy_repo(root: Path) -> Repo:
    """A repo with every kind of change, so export has real work to interrupt."""
    repo = make_repo(root / "repo", files={f"src/m{i}.py": f"x = {i}\n" * 50 for i in range(60)})
    for i in range(0, 60, 3):
        repo.write(f"src/m{i}.py", f"x = {i + 1}\n" * 60)
    repo.git("add", "src/m0.py", "src/m3.py")
    repo.write("src/m1.py", "changed after staging\n")
    for i in range(120):
        repo.write(f"scratch/u{i}.txt", f"untracked {i}\n" * 40)
    return repo


def _kill_loop(
    args: list[str], cwd: Path, check: Callable[[int, int | None], None], seed: int
) -> int:
    """KILLS runs killed at random moments, more (up to three times as many) while fewer than
    MIN_KILLS really interrupted one: the span shrinks to the quickest run that finished, so a
    machine (or a warm command server) faster than the first run keeps getting killed mid-way."""
    _duration(args, cwd)  # the first run may be the one that starts a command server
    span = _duration(args, cwd)
    rng = random.Random(seed)
    killed = 0
    n = 0
    while n < KILLS or (killed < MIN_KILLS and n < 3 * KILLS):
        delay = rng.uniform(0.02, span * 0.9)
        started = time.monotonic()
        code = _kill_after(args, cwd, delay)
        if code is None:
            killed += 1
        else:
            span = min(span, time.monotonic() - started)
        check(n, code)
        n += 1
    return killed


def test_kill_9_during_export_leaves_no_partial_package_and_user_state_untouched(
    tmp_path: Path,
) -> None:
    repo = _busy_repo(tmp_path)
    transcript = cc_fixture.write(tmp_path / "t.jsonl", repo.path)
    args = ["export", "--goal", "kill me", "--transcript", str(transcript)]
    before = _user_state(repo)

    def check(n: int, code: int | None) -> None:
        assert code in (None, 0), f"kill {n}: export exited {code}"
        assert _user_state(repo) == before, f"kill {n}: HEAD/index/worktree changed"
        _assert_packages_valid(repo, f"kill {n}")

    killed = _kill_loop(args, repo.path, check, SEED)
    assert killed >= MIN_KILLS, "the loop must really interrupt runs (timing drifted?)"
    res = run_cli(*args, "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert run_cli("validate", res.json()["data"]["package_id"], cwd=repo.path).returncode == 0
    assert _user_state(repo) == before


def _long_transcript(path: Path, cwd: Path) -> Path:
    from tests.transcript.builders import CC, write_jsonl

    cc = CC(cwd=str(cwd))
    recs = []
    for i in range(150):
        recs += [cc.user(f"step {i}: look at module_{i % 9}.py"),
                 cc.assistant(f"m{i}", [{"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                         "input": {"command": f"cat module_{i % 9}.py"}}]),
                 cc.result(f"t{i}", f"line {i}\n" * 200)]
    return write_jsonl(path, recs)


def test_kill_9_during_fold_leaves_a_valid_store_and_the_next_fold_succeeds(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    transcript = _long_transcript(tmp_path / "long.jsonl", repo.path)
    store = repo.path / ".contextfork" / "cold" / "kill"
    args = ["fold", "session", "--transcript", str(transcript), "--session", "kill"]
    before = _user_state(repo)
    span = _duration(args, repo.path)
    shutil.rmtree(store)

    def check(n: int, code: int | None) -> None:
        assert code in (None, 0), f"kill {n}: fold exited {code}"
        assert _user_state(repo) == before
        if store.is_dir():
            # Nodes are written before their index rows (two phases, see cold/store.py): a kill
            # in between leaves verified nodes the index does not list yet. They are never
            # served (IPCF CONF-12) and the next fold indexes them; anything else is a bug.
            v = cold_api.validate(store_dir=store)
            other = [p.line() for p in v.problems if p.code != "orphan_node"]
            assert v.exit_code != 3 and not other, f"kill {n}: store invalid: {other[:3]}"

    rng = random.Random(SEED + 1)
    for n in range(KILLS):
        check(n, _kill_after(args, repo.path, rng.uniform(0.05, span * 0.9)))
    res = run_cli(*args, cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert cold_api.validate(store_dir=store).exit_code == 0
    assert run_cli("fold", "validate", "--session", "kill", cwd=repo.path).returncode == 0


def _remote_with_clone(tmp_path: Path) -> tuple[Path, Repo]:
    seed = make_repo(tmp_path / "seed")
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed.path), str(remote))
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "a"))
    a = Repo(tmp_path / "a")
    a.git("config", "user.email", "author@example.com")
    a.git("config", "user.name", "Test Author")
    return remote, a


def test_kill_9_during_push_leaves_no_half_ref_and_the_next_push_succeeds(
    tmp_path: Path,
) -> None:
    remote, a = _remote_with_clone(tmp_path)
    for i in range(3):
        a.write(f"work{i}.txt", f"work {i}\n" * 500)
        assert run_cli("export", "--goal", f"g{i}", cwd=a.path).returncode == 0
    before = _user_state(a)
    args = ["push", "origin"]
    span = _duration(args, a.path)
    for ref in git(remote, "for-each-ref", "--format=%(refname)", "refs/contextfork/").split():
        git(remote, "update-ref", "-d", ref)
    for ref in a.git("for-each-ref", "--format=%(refname)", "refs/contextfork/").split():
        a.git("update-ref", "-d", ref)

    def check(n: int, code: int | None) -> None:
        assert code in (None, 0), f"kill {n}: push exited {code}"
        assert _user_state(a) == before, f"kill {n}: HEAD/index/worktree changed"
        assert git(remote, "fsck", "--no-progress", check=False) is not None
        for ref in git(remote, "for-each-ref", "--format=%(refname)",
                       "refs/contextfork/packages/").split():
            tree = git(remote, "ls-tree", "-r", "--name-only", ref).split("\n")
            assert "manifest.json" in tree, f"kill {n}: {ref} holds a partial tree"

    rng = random.Random(SEED + 2)
    for n in range(KILLS):
        check(n, _kill_after(args, a.path, rng.uniform(0.05, span * 0.9)))
    res = run_cli(*args, cwd=a.path)
    if res.returncode != 0:
        # A kill that lands while the remote's receive-pack holds a ref lock leaves git's lock
        # file behind (no process can clean up after SIGKILL). push must name it, and nothing
        # else may be wrong: without it, the push goes through.
        lock = re.search(r"the remote holds the lock (\S+\.lock) ", res.stderr)
        assert lock, res.stderr
        Path(lock.group(1)).unlink()
        res = run_cli(*args, cwd=a.path)
    assert res.returncode == 0, res.stderr
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "b"))
    pulled = run_cli("pull", "--json", cwd=tmp_path / "b")
    assert pulled.returncode == 0, pulled.stderr
    assert len(pulled.json()["data"]["pulled"]) == 3


def test_kill_9_during_resume_apply_then_a_rerun_finishes_exactly(tmp_path: Path) -> None:
    """The apply journal (issue 13 #6) lets a re-run finish whatever a kill interrupted."""
    repo = _busy_repo(tmp_path)
    out = run_cli("export", "--goal", "apply me", "--json", cwd=repo.path)
    assert out.returncode == 0, out.stderr
    pid = out.json()["data"]["package_id"]
    exported = _user_state(repo)
    clean_args = [("reset", "-q", "--hard"), ("clean", "-qfd", "--exclude=.contextfork")]

    def clean() -> None:
        for a in clean_args:
            repo.git(*a)

    clean()
    args = ["resume", pid, "--apply", "--no-mark-consumed"]
    span = _duration(args, repo.path)
    # HEAD and every file's bytes; the index is issue 13 #6 too (staged vs unstaged), not here.
    assert _worktree(repo) == _worktree_of(exported)
    rng = random.Random(SEED + 3)
    failures = []
    lock = repo.path / ".git" / "index.lock"
    for n in range(KILLS):
        if lock.exists():  # a git child killed mid-write; recorded below, cleared to go on
            lock.unlink()
        clean()
        _kill_after(args, repo.path, rng.uniform(0.05, span * 0.9))
        rerun = run_cli(*args, cwd=repo.path)
        if rerun.returncode != 0 or _worktree(repo) != _worktree_of(exported):
            failures.append(f"kill {n}: re-run exit {rerun.returncode}: {rerun.stderr.strip()}")
    assert not failures, failures[:3]
