"""Where a session's cold store lives, which names are safe, and the store-wide lock.

Layout (IPCF-compatible, under ``<repo>/.contextfork/cold/<session_id>/``)::

    cold_nodes/step_NNNNNN.json   one verified node per folded step
    recall_index.json             IPCF view of the index (see index.export_ipcf_view)
    hydration_policy.json         caps and matching rules; its hash enters every projection
    eviction_log.json             every eviction, in order
    turn_state.json               what is paged in in the current turn (ours, not IPCF)
    index.sqlite3                 the inverted index page-in actually uses (ours, not IPCF)
    .lock                         filelock lock serialising writers across processes

Containment is checked on every open, whatever the policy says: the session id must be a plain
name, and the resolved store must sit inside the repo's ``.contextfork/cold`` (no symlink
escape, no sibling-prefix directory such as ``cold-evil``).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from contextfork.errors import IntegrityError, UsageError
from contextfork.layout import cold_root, ensure_for_store, repo_root
from contextfork.paths import contained
from contextfork.sessionids import check_session_id as check_session_id  # re-exported

IPCF_VERSION = "1.1"
NODE_VERSION = 1
STEP_MAX = 999_999

DEFAULT_POLICY: dict[str, object] = {
    "policy_version": 1,
    "ipcf_version": IPCF_VERSION,
    "per_call_token_cap": 3000,
    "per_turn_token_cap": 3500,
    "tokenizer": "o200k_base",
    "normalization": "NFC+casefold+turkish-i",
    "prefix_min_length": 5,
    "prefix_max_extra": 3,
    "tie_break": "newest_step",
    "intent_ownership": "newest_owner_or_nothing",
    "follow_refs": 1,
    "redaction": "gitleaks-style-v1",
}


# Bounds of every numeric policy setting (the schema's minimum/maximum). An edited policy may
# tighten or loosen the defaults within them, and every read says so; beyond them it is refused.
POLICY_BOUNDS: dict[str, tuple[int, int]] = {
    "per_call_token_cap": (0, 8000),
    "per_turn_token_cap": (0, 16000),
    "prefix_min_length": (1, 64),
    "prefix_max_extra": (0, 8),
    "follow_refs": (0, 1),
}


def policy_problems(policy: dict[str, object]) -> list[str]:
    """Why a policy is out of bounds (empty when it is within them)."""
    out = []
    for key, (lo, hi) in POLICY_BOUNDS.items():
        value = policy.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            out.append(f"{key} must be an integer (got {value!r})")
        elif value > hi:
            out.append(f"{key} {value} exceeds the maximum {hi}")
        elif value < lo:
            out.append(f"{key} {value} is below the minimum {lo}")
    return out


def policy_differences(policy: dict[str, object]) -> list[str]:
    """Each setting that differs from ``DEFAULT_POLICY``, e.g. 'per_call_token_cap 6000
    (default 3000)'; empty for the default policy."""
    keys = sorted(set(policy) | set(DEFAULT_POLICY))
    return [
        f"{k} {policy.get(k, '(missing)')} (default {DEFAULT_POLICY.get(k, '(none)')})"
        for k in keys
        if policy.get(k) != DEFAULT_POLICY.get(k)
    ]


def policy_sha256(policy: dict[str, object]) -> str:
    """The folding policy hash that enters every projection: over the IPCF view of the policy
    (cold.projection.ipcf_policy_view), so default caps hash like any IPCF-1.1 peer's default."""
    from contextfork.cold.projection import folding_policy_hash

    return folding_policy_hash(policy)


def step_key(step_id: int) -> str:
    return f"step_{step_id:06d}"


_NODE_FILE = re.compile(r"step_([0-9]{6})\.json")  # ASCII digits: \d takes any script's


def step_of_name(name: str) -> int | None:
    """The step id a node file's name (``step_NNNNNN.json``) gives; None for any other name."""
    m = _NODE_FILE.fullmatch(name)
    return int(m.group(1)) if m else None


def check_step_id(step_id: int) -> int:
    if isinstance(step_id, bool) or not isinstance(step_id, int) or not 1 <= step_id <= STEP_MAX:
        raise UsageError(f"step id {step_id!r} is out of range", hint=f"use 1..{STEP_MAX}")
    return step_id


#: The agent's curation decisions beside a store (contextfork.cold.decisions reads it, contextfork.curate edits it).
CURATION_FILE = "curation.json"


@dataclass(frozen=True)
class StoreLayout:
    root: Path  # <repo>/.contextfork/cold
    session_id: str

    @property
    def dir(self) -> Path:
        return self.root / self.session_id

    @property
    def nodes_dir(self) -> Path:
        return self.dir / "cold_nodes"

    def node_path(self, step_id: int) -> Path:
        return self.nodes_dir / f"{step_key(step_id)}.json"

    @property
    def curation(self) -> Path:
        return self.dir / CURATION_FILE

    @property
    def recall_index(self) -> Path:
        return self.dir / "recall_index.json"

    @property
    def policy_file(self) -> Path:
        return self.dir / "hydration_policy.json"

    @property
    def eviction_log(self) -> Path:
        return self.dir / "eviction_log.json"

    @property
    def turn_state(self) -> Path:
        return self.dir / "turn_state.json"

    @property
    def sqlite(self) -> Path:
        return self.dir / "index.sqlite3"

    @property
    def lock_file(self) -> Path:
        return self.dir / ".lock"

    def containment_problems(self) -> list[str]:
        """Reasons the store escapes its root (symlinks, sibling prefixes); empty when safe."""
        problems = []
        base = self.root.parent.parent  # the repo
        if self.root.is_symlink() or self.root.parent.is_symlink():
            problems.append(f"{self.root} is a symlink")
        elif self.root.exists() and not contained(base, self.root):
            problems.append(f"{self.root} resolves outside the repository")
        if self.dir.is_symlink():
            problems.append(f"{self.dir} is a symlink")
        elif self.dir.exists() and not contained(self.root, self.dir):
            problems.append(f"{self.dir} resolves outside {self.root}")
        if self.nodes_dir.is_symlink():
            problems.append(f"{self.nodes_dir} is a symlink")
        return problems

    def ensure_contained(self) -> None:
        problems = self.containment_problems()
        if problems:
            raise IntegrityError(
                f"cold store escapes its root: {problems[0]}",
                hint="remove the symlink; the store must be a plain directory",
            )


def layout_for(repo: Path | None, session_id: str) -> StoreLayout:
    root = cold_root(repo_root(repo))
    return StoreLayout(root=root, session_id=check_session_id(session_id))


def layout_at(store_dir: Path) -> StoreLayout:
    """A layout for an explicit store directory (tests, scenario, bench)."""
    store_dir = Path(store_dir)
    return StoreLayout(root=store_dir.parent, session_id=check_session_id(store_dir.name))


def default_session(session: str | None) -> str:
    return session or os.environ.get("CONTEXTFORK_SESSION") or "default"


@contextlib.contextmanager
def store_lock(layout: StoreLayout) -> Iterator[None]:
    """Serialise writers across processes (hooks run in parallel); ``validate`` takes it too.

    ``filelock``: flock on POSIX, ``LockFileEx`` on Windows, and a lock file opened without
    following a symlink. Imported here, not at module level: only a store that is written pays
    for it (~10 ms; the prompt hook's page-in records what it paged in, so it pays it too).
    """
    from filelock import FileLock  # lazy: hot path (importing the store stays cheap)

    ensure_for_store(layout.root)
    layout.dir.mkdir(parents=True, exist_ok=True)
    layout.ensure_contained()
    with FileLock(layout.lock_file):
        yield
