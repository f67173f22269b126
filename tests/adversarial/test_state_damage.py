"""A damaged cold store is one clear line and exit 3, never a traceback (issue 22 #9).

The store's own state, damaged the ways disks, crashes and hand edits damage it:

- ``index.sqlite3``: one byte flipped at many offsets of the real file (every page's header
  and a seeded spot inside each page, plus the database header). The index is derived data but
  also holds what no node file can vouch for (each step's identity at fold time), so reads do
  not rebuild it silently: they report it (exit 3, ``fold index --rebuild`` named), or answer
  when the flip missed everything they read; ``fold index --rebuild`` always recovers.
- ``turn_state.json`` and ``eviction_log.json``: truncated, not UTF-8, not JSON, nested past
  the stack, a key missing, a value of the wrong type, a FIFO in its place.
- ``curation.json`` (the agent's decisions): the same, and wrong types under a recomputed hash.

Hooks never fail the prompt: exit 0, nothing half-written on stdout, one line in hooks.log.
Commands run in-process (``tests.helpers.cli``: the real entry point, argv to exit code); the
FIFO rows run as real processes with a timeout, since the bug there was a hang.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from contextfork.hashing import canonical_sha256
from tests.harness import cc_fixture
from tests.helpers import CliResult, cli, make_repo, run_cli

S = cc_fixture.SESSION
PROBLEM_LINE = re.compile(r"^(error|warning|info): [a-z_]+: ")
SEED = 20261202


@dataclass
class Store:
    repo: Path
    transcript: Path
    pristine: Path

    @property
    def dir(self) -> Path:
        return self.repo / ".contextfork" / "cold" / S

    def restore(self) -> None:
        shutil.rmtree(self.dir)
        shutil.copytree(self.pristine, self.dir)
        (self.repo / ".contextfork" / "logs" / "hooks.log").unlink(missing_ok=True)

    def hook(self) -> CliResult:
        payload = {"session_id": S, "transcript_path": str(self.transcript),
                   "cwd": str(self.repo), "prompt": "which billing port did we set?"}  # fmt: skip
        return cli("hooks", "run", "user-prompt-submit", input=json.dumps(payload), cwd=self.repo)

    def hook_errors(self) -> list[str]:
        """The ``error`` of each hooks.log record at level error (one JSON object a line)."""
        path = self.repo / ".contextfork" / "logs" / "hooks.log"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        records = [json.loads(line) for line in lines]
        return [str(r.get("error")) for r in records if r.get("level") == "error"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root = tmp_path_factory.mktemp("damage")
    repo = make_repo(root / "repo")
    transcript = cc_fixture.write(root / "session.jsonl", repo.path)
    for args in (("fold", "session", "--transcript", str(transcript), "--session", S),
                 ("fold", "scan", "billing port", "--session", S),
                 ("fold", "scan", "billing port", "--session", S),  # evicts: the log exists
                 ("context", "pin", "--session", S, "--args", '{"step": 1}')):  # fmt: skip
        res = cli(*args, cwd=repo.path)
        assert res.returncode == 0, (args, res.stderr)
    store_dir = repo.path / ".contextfork" / "cold" / S
    with sqlite3.connect(store_dir / "index.sqlite3") as conn:  # everything in the main file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for extra in ("-wal", "-shm"):
        Path(str(store_dir / "index.sqlite3") + extra).unlink(missing_ok=True)
    for name in ("turn_state.json", "eviction_log.json", "curation.json", "index.sqlite3"):
        assert (store_dir / name).is_file(), name
    assert json.loads((store_dir / "turn_state.json").read_bytes())["hydrated"]
    pristine = root / "pristine"
    shutil.copytree(store_dir, pristine)
    return Store(repo.path, transcript, pristine)


def _clean(res: CliResult, what: str) -> None:
    """No traceback, no "internal error", whatever the exit code."""
    both = res.stdout + res.stderr
    assert "Traceback" not in both and "internal error" not in res.stderr, f"{what}: {res.stderr}"


def _one_line(res: CliResult, what: str, *needles: str) -> None:
    _clean(res, what)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, f"{what}: {res.stderr}"
    for needle in needles:
        assert needle in lines[0], f"{what}: {needle!r} not in {lines[0]!r}"


def _problems(res: CliResult, what: str, *needles: str) -> None:
    _clean(res, what)
    lines = res.stderr.strip().splitlines()
    assert lines and all(PROBLEM_LINE.match(line) for line in lines), f"{what}: {res.stderr}"
    for needle in needles:
        assert needle in res.stderr, f"{what}: {needle!r} not in {res.stderr}"


def _hook_passes(store: Store, what: str, *needles: str) -> None:
    """Exit 0, stdout empty or one JSON object, and (with needles) the damage named in the log."""
    res = store.hook()
    _clean(res, what)
    assert res.returncode == 0 and not res.stderr, f"{what}: {res.returncode} {res.stderr}"
    if res.stdout:
        json.loads(res.stdout)
    errors = store.hook_errors()
    assert len(errors) <= 1, f"{what}: {errors}"
    for needle in needles:
        assert errors and needle in errors[0], f"{what}: {needle!r} not in hooks.log: {errors}"


def test_the_pristine_store_answers_every_command(store: Store) -> None:
    store.restore()
    for args in [*READS, ("fold", "validate", "--session", S)]:
        res = cli(*args, cwd=store.repo)
        assert res.returncode == 0, (args, res.stderr)
    res = store.hook()
    assert res.returncode == 0 and "5433" in res.stdout  # the page-in really reads the store
    assert store.hook_errors() == []


# --- index.sqlite3 -----------------------------------------------------------------------------

READS: list[tuple[str, ...]] = [
    ("fold", "scan", "billing port", "--session", S),
    ("fold", "recall", "port", "--session", S),
    ("fold", "status", "--session", S),
    ("fold", "hydrate", "1", "--session", S),
    ("context", "status", "--session", S),
]


def _offsets() -> list[int]:
    """The database header's fields, and in every page its header and one seeded spot."""
    rng = random.Random(SEED)
    header = [0, 7, 16, 17, 18, 19, 21, 28, 31, 44, 47, 56, 96, 100, 101, 103, 105, 107]
    out = list(header)
    pages, size = 19, 4096  # checked against the real file by the test below
    for p in range(1, pages):
        out += [p * size, p * size + 3, p * size + rng.randrange(8, size)]
    return out


OFFSETS = _offsets()


def _flip(store: Store, offset: int) -> None:
    db = store.dir / "index.sqlite3"
    data = bytearray(db.read_bytes())
    data[offset % len(data)] ^= 0xFF
    db.write_bytes(bytes(data))


def test_the_offsets_cover_every_page_of_the_real_index(store: Store) -> None:
    data = (store.pristine / "index.sqlite3").read_bytes()
    page = int.from_bytes(data[16:18], "big")
    assert page == 4096 and len(data) // page == 19, (page, len(data))


@pytest.mark.parametrize("offset", OFFSETS)
def test_a_flipped_byte_of_the_index_is_exit_3_and_one_line_or_a_clean_answer(
    store: Store, offset: int
) -> None:
    for args in READS:
        store.restore()
        _flip(store, offset)
        res = cli(*args, cwd=store.repo)
        what = f"offset {offset}: {' '.join(args[:2])} -> {res.returncode}"
        assert res.returncode in (0, 3), f"{what}: {res.stderr}"
        if res.returncode == 3:
            _one_line(res, what)
        else:
            _clean(res, what)
    store.restore()
    _flip(store, offset)
    res = cli("fold", "validate", "--session", S, cwd=store.repo)
    what = f"offset {offset}: validate -> {res.returncode}"
    assert res.returncode in (0, 1, 3), f"{what}: {res.stderr}"
    if res.returncode:
        _problems(res, what)
    _hook_passes(store, f"offset {offset}: hook")
    # The documented repair works whatever the flip hit.
    res = cli("fold", "index", "--rebuild", "--session", S, cwd=store.repo)
    assert res.returncode == 0, f"offset {offset}: fold index --rebuild: {res.stderr}"
    res = cli("fold", "validate", "--session", S, cwd=store.repo)
    assert res.returncode == 0, f"offset {offset}: validate after the rebuild: {res.stderr}"
    res = cli("fold", "hydrate", "1", "--session", S, cwd=store.repo)
    assert res.returncode == 0 and "5433" in res.stdout, f"offset {offset}: {res.stderr}"


def test_a_damaged_index_is_reported_by_every_reader_and_never_rebuilt_silently(
    store: Store,
) -> None:
    store.restore()
    _flip(store, 0)  # "SQLite format 3": no longer a database
    damaged = (store.dir / "index.sqlite3").read_bytes()
    for args in READS:
        res = cli(*args, cwd=store.repo)
        assert res.returncode == 3, (args, res.stderr)
        _one_line(res, " ".join(args), "index.sqlite3", "fold index --rebuild")
    res = cli("fold", "validate", "--session", S, cwd=store.repo)
    assert res.returncode == 3
    _problems(res, "validate", "index.sqlite3")
    _hook_passes(store, "hook", "index.sqlite3")
    assert (store.dir / "index.sqlite3").read_bytes() == damaged  # nothing replaced it
    res = cli("fold", "index", "--session", S, cwd=store.repo)  # keeps the recorded identities
    assert res.returncode == 3
    _one_line(res, "fold index", "--rebuild")
    for args in (("status", "--transcript", str(store.transcript)),
                 ("render", "--transcript", str(store.transcript)),
                 ("view", "--transcript", str(store.transcript), "--out",
                  str(store.repo.parent / "site"))):  # fmt: skip
        res = cli(*args, cwd=store.repo)
        assert res.returncode == 0, (args, res.stderr)  # they show the nodes as unverified
        _clean(res, args[0])


@pytest.mark.parametrize("offset", [2 * 4096 + 100, 4 * 4096 + 2000, 9 * 4096 + 777])
def test_status_render_and_view_survive_a_flipped_index(store: Store, offset: int) -> None:
    store.restore()
    _flip(store, offset)
    for args in (("status", "--transcript", str(store.transcript)),
                 ("render", "--transcript", str(store.transcript)),
                 ("view", "--transcript", str(store.transcript), "--out",
                  str(store.repo.parent / "site"))):  # fmt: skip
        res = cli(*args, cwd=store.repo)
        assert res.returncode == 0, (offset, args, res.stderr)
        _clean(res, args[0])


def test_an_index_sqlite_cannot_use_now_is_exit_1_without_a_rebuild_hint(store: Store) -> None:
    """Busy, locked, full, read-only: SQLite's own result code says it is not damage."""
    from contextfork.cold import index as idx
    from contextfork.cold.layout import StoreLayout

    layout = StoreLayout(store.repo / ".contextfork" / "cold", S)
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = 5  # type: ignore[attr-defined]
    err = idx.failure(layout, busy)
    assert err.exit_code == 1 and "--rebuild" not in err.one_line()
    corrupt = sqlite3.DatabaseError("database disk image is malformed")
    corrupt.sqlite_errorcode = 11  # type: ignore[attr-defined]
    err = idx.failure(layout, corrupt)
    assert err.exit_code == 3 and "fold index --rebuild" in err.one_line()


# --- turn_state.json / eviction_log.json -------------------------------------------------------

TURN = {"calls": 1, "hydrated": [{"call": 1, "mode": "content", "step_id": 1, "tokens": 120}],
        "session_id": S, "state_version": 1, "tokens_used": 120, "turn": 5}  # fmt: skip


def _turn(**changes: object) -> bytes:
    return json.dumps({**TURN, **changes}).encode()


def _turn_without(key: str) -> bytes:
    return json.dumps({k: v for k, v in TURN.items() if k != key}).encode()


_RAW_TURN = json.dumps(TURN).encode()
TURN_EDITS: dict[str, bytes] = {
    "truncated": _RAW_TURN[: len(_RAW_TURN) // 2],
    "empty": b"",
    "not-utf8": _RAW_TURN.replace(b'"content"', b'"\xff\xfe"'),
    "not-an-object": b"[]",
    "null": b"null",
    "nested-past-the-stack": b"[" * 100_000 + b"]" * 100_000,
    **{f"missing-{k}": _turn_without(k) for k in TURN},
    "turn-text": _turn(turn="x"),
    "turn-null": _turn(turn=None),
    "turn-float": _turn(turn=1.5),
    "turn-infinite": _RAW_TURN.replace(b'"turn": 5', b'"turn": 1e400'),
    "turn-nan": _RAW_TURN.replace(b'"turn": 5', b'"turn": NaN'),
    "turn-negative": _turn(turn=-1),
    "turn-bool": _turn(turn=True),
    "calls-text": _turn(calls="many"),
    "tokens-list": _turn(tokens_used=[]),
    "hydrated-number": _turn(hydrated=5),
    "hydrated-text": _turn(hydrated="abc"),
    "hydrated-object": _turn(hydrated={"a": 1}),
    "hydrated-item-number": _turn(hydrated=[5]),
    "hydrated-item-empty": _turn(hydrated=[{}]),
    "hydrated-step-text": _turn(hydrated=[{"call": 1, "mode": "content", "step_id": "one",
                                           "tokens": 3}]),
    "hydrated-no-tokens": _turn(hydrated=[{"call": 1, "mode": "content", "step_id": 1}]),
    "version-2": _turn(state_version=2),
    "another-session": _turn(session_id="other"),
}
TURN_READERS: list[tuple[str, ...]] = [
    ("fold", "scan", "billing port", "--session", S),
    ("fold", "hydrate", "1", "--session", S),
    ("fold", "evict", "1", "--session", S),
    ("fold", "status", "--session", S),
]


@pytest.mark.parametrize("edit", list(TURN_EDITS))
def test_an_edited_turn_state_is_exit_3_and_one_line_naming_it(store: Store, edit: str) -> None:
    _damaged_state_file(store, "turn_state.json", TURN_EDITS[edit], TURN_READERS)


LOG_EDITS: dict[str, bytes] = {
    "truncated": b'{"entries": [{"seq": 1',
    "not-utf8": b'{"entries": [], "x": "\xff"}',
    "entries-number": b'{"entries": 5, "log_version": 1}',
    "entries-of-numbers": b'{"entries": [1, 2], "log_version": 1}',
    "not-an-object": b'"log"',
}


@pytest.mark.parametrize("edit", list(LOG_EDITS))
def test_an_edited_eviction_log_is_exit_3_and_one_line_naming_it(store: Store, edit: str) -> None:
    _damaged_state_file(store, "eviction_log.json", LOG_EDITS[edit], [
        ("fold", "scan", "billing port", "--session", S),  # evicts last turn's steps: appends
        ("fold", "evict", "1", "--session", S),
    ])  # fmt: skip


def _damaged_state_file(store: Store, name: str, data: bytes,
                        readers: list[tuple[str, ...]]) -> None:  # fmt: skip
    for args in readers:
        store.restore()
        (store.dir / name).write_bytes(data)
        res = cli(*args, cwd=store.repo)
        what = f"{name}: {' '.join(args[:2])} -> {res.returncode}"
        assert res.returncode == 3, f"{what}: {res.stderr}"
        _one_line(res, what, name)
        assert (store.dir / name).read_bytes() == data  # refused, not overwritten
    store.restore()
    (store.dir / name).write_bytes(data)
    res = cli("fold", "validate", "--session", S, cwd=store.repo)
    assert res.returncode == 3, f"{name}: validate: {res.stderr}"
    _problems(res, f"{name}: validate", name)
    _hook_passes(store, f"{name}: hook", name)


def test_a_turn_state_naming_a_step_the_store_lacks_fails_validate_only(store: Store) -> None:
    """Well-formed but wrong: validate reports the broken reference (exit 1); the next scan
    simply evicts it."""
    store.restore()
    (store.dir / "turn_state.json").write_bytes(
        _turn(hydrated=[{"call": 1, "mode": "content", "step_id": 999, "tokens": 3}]))
    res = cli("fold", "validate", "--session", S, cwd=store.repo)
    assert res.returncode == 1
    _problems(res, "validate", "broken_reference")
    res = cli("fold", "scan", "billing port", "--session", S, cwd=store.repo)
    assert res.returncode == 0, res.stderr


# --- curation.json (the agent's decisions) -----------------------------------------------------


def _curation(store: Store) -> dict[str, object]:
    data: dict[str, object] = json.loads((store.pristine / "curation.json").read_bytes())
    return data


def _rehashed(doc: dict[str, object]) -> bytes:
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return json.dumps({**body, "sha256": canonical_sha256(body)}).encode()


CURATION_EDITS: dict[str, Callable[[dict[str, object]], bytes]] = {
    "truncated": lambda d: json.dumps(d).encode()[:40],
    "not-utf8": lambda d: json.dumps(d).encode().replace(b'"format"', b'"\xff\xfe"'),
    "nested-past-the-stack": lambda d: b"[" * 100_000 + b"]" * 100_000,
    "edited-not-rehashed": lambda d: json.dumps({**d, "revision": 9}).encode(),
    "revision-infinite": lambda d: _rehashed({**d, "revision": float("inf")}),
    "revision-text": lambda d: _rehashed({**d, "revision": "x"}),
    "revision-float": lambda d: _rehashed({**d, "revision": 1.5}),
    "session-number": lambda d: _rehashed({**d, "session_id": 5}),
    "pinned-text": lambda d: _rehashed({**d, "pinned": "uuid:x"}),
    "briefs-object": lambda d: _rehashed({**d, "briefs": {"a": 1}}),
    "brief-list": lambda d: _rehashed({**d, "briefs": [[1]]}),
    "brief-redactions-infinite": lambda d: _rehashed(
        {**d, "briefs": [{"key": "k", "keys": ["k"], "text": "t", "redactions": float("inf")}]}),
    "brief-text-number": lambda d: _rehashed(
        {**d, "briefs": [{"key": "k", "keys": ["k"], "text": 5, "redactions": 0}]}),
    "boundary-number": lambda d: _rehashed({**d, "boundary": 5}),
}


@pytest.mark.parametrize("edit", list(CURATION_EDITS))
def test_an_edited_curation_file_is_exit_3_and_one_line_naming_it(store: Store, edit: str) -> None:
    data = CURATION_EDITS[edit](_curation(store))
    for args in (("fold", "scan", "billing port", "--session", S),
                 ("context", "status", "--session", S),
                 ("context", "pin", "--session", S, "--args", '{"step": 2}'),
                 ("render", "--transcript", str(store.transcript))):  # fmt: skip
        store.restore()
        (store.dir / "curation.json").write_bytes(data)
        res = cli(*args, cwd=store.repo)
        what = f"{edit}: {' '.join(args[:2])} -> {res.returncode}"
        assert res.returncode == 3, f"{what}: {res.stderr}"
        _one_line(res, what, "curation.json")
    store.restore()
    (store.dir / "curation.json").write_bytes(data)
    res = cli("fold", "validate", "--session", S, cwd=store.repo)
    assert res.returncode == 3, f"{edit}: validate: {res.stderr}"
    _problems(res, f"{edit}: validate", "curation.json")
    _hook_passes(store, f"{edit}: hook")


# --- a FIFO where a state file belongs: refused at once, never waited on -----------------------


@pytest.mark.parametrize("name", ["turn_state.json", "curation.json", "eviction_log.json"])
def test_a_fifo_in_place_of_a_state_file_is_refused_not_waited_on(store: Store, name: str) -> None:
    store.restore()
    (store.dir / name).unlink()
    os.mkfifo(store.dir / name)
    try:
        res = run_cli("fold", "scan", "billing port", "--session", S, cwd=store.repo, timeout=60)
        assert res.returncode == 3, res.stderr
        _one_line(res, f"{name}: scan", name, "FIFO")
    finally:
        store.restore()
