"""Parallel writers (real processes): nothing lost, nothing duplicated, everything verifies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from contextfork.cold import api as cold_api
from contextfork.package.validate import validate_package
from tests.harness import cc_fixture
from tests.helpers import Repo, clean_env, make_repo

EXPORTERS = 6
FOLDERS = 6
STEPS_EACH = 4


def _spawn(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "contextfork", *args], cwd=cwd,
                            env=clean_env(), stdin=subprocess.PIPE if stdin else None,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(procs: list[subprocess.Popen[bytes]], stdin: bytes | None = None) -> list[bytes]:
    outs = []
    for p in procs:
        out, err = p.communicate(stdin, timeout=180)
        assert p.returncode == 0, err.decode(errors="replace")
        outs.append(out)
    return outs


def test_parallel_exports_each_publish_one_complete_package(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for i in range(40):
        repo.write(f"wip/f{i}.txt", f"work {i}\n" * 100)
    procs = [_spawn(["export", "--goal", f"writer {i}", "--json"], repo.path)
             for i in range(EXPORTERS)]
    ids = [json.loads(out)["data"]["package_id"] for out in _finish(procs)]
    assert len(set(ids)) == EXPORTERS, "two exports got the same package id"
    on_disk = sorted(p.name for p in (repo.path / ".contextfork" / "packages").iterdir()
                     if not p.name.startswith("."))
    assert on_disk == sorted(ids), "a package was lost or an extra one appeared"
    goals = set()
    for pid in ids:
        pkg = repo.path / ".contextfork" / "packages" / pid
        assert validate_package(pkg, repo.path).exit_code == 0
        goals.add(json.loads((pkg / "handoff.json").read_bytes())["active_goal"]["goal"])
    assert goals == {f"writer {i}" for i in range(EXPORTERS)}


def _step_worker(repo: Path, first: int) -> list[str]:
    script = (
        "from contextfork.cold import api\n"
        f"for s in range({first}, {first + STEPS_EACH}):\n"
        "    api.fold_step(s, f'step {s} summary', f'payload of step {s}\\n' * 30,"
        " repo=__import__('pathlib').Path('.'), session='par')\n"
    )
    return [sys.executable, "-c", script]


def test_parallel_folds_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    repo: Repo = make_repo(tmp_path / "repo")
    transcript = cc_fixture.write(tmp_path / "t.jsonl", repo.path)
    procs = [subprocess.Popen(_step_worker(repo.path, 100 + i * STEPS_EACH), cwd=repo.path,
                              env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i in range(FOLDERS)]
    # The same transcript folded twice at once: the second must be a no-op, not a duplicate.
    procs += [_spawn(["fold", "session", "--transcript", str(transcript), "--session", "par"],
                     repo.path) for _ in range(2)]
    _finish(procs)
    store = repo.path / ".contextfork" / "cold" / "par"
    v = cold_api.validate(store_dir=store)
    assert v.exit_code == 0, [p.line() for p in v.problems][:5]
    files = sorted(int(p.stem.split("_")[1]) for p in (store / "cold_nodes").glob("step_*.json"))
    transcript_steps = len(files) - FOLDERS * STEPS_EACH
    assert transcript_steps >= 1
    want = list(range(1, transcript_steps + 1)) + list(range(100, 100 + FOLDERS * STEPS_EACH))
    assert files == want, "a step was lost"
    status = cold_api.status(store_dir=store).data
    assert status["nodes"] == len(files), "the index lost or duplicated a node"
