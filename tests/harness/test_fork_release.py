"""``fork`` lets each step's blocks go once the fold has built its node (issue 27): what fork
reads of them (subagent units, the compaction summary, the context and window tokens, the
export's seed) is taken before the fold. What it writes — the fork's lines, its package, the
folded nodes and their index — is byte for byte what a fork that kept every block writes."""

from __future__ import annotations

import itertools
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.harness import cc_fixture
from tests.helpers import Repo


def _freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork's new uuids, the package's id and time: the same in both runs."""
    from contextfork.package import export

    n = itertools.count(1)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(n), version=4))
    monkeypatch.setattr(export, "new_package_id", lambda now=None: "20260101T000000000Z-abcdef")
    monkeypatch.setattr(export, "utc_now_iso", lambda: "2026-01-01T00:00:00.000Z")


def _fork(repo: Repo, transcript: Path, monkeypatch: pytest.MonkeyPatch, *, keep: bool) -> tuple[
    dict[str, Any], dict[str, bytes], bool
]:
    """One fork: its report, every file it wrote, and whether the fold emptied every step's
    blocks. ``keep``: the fold is told to keep them (the reference)."""
    from contextfork.cold import api as cold_api
    from contextfork.harness.fork import fork_session

    _freeze(monkeypatch)
    real = cold_api.fold_session
    emptied: list[bool] = []

    def fold(*args: Any, **kwargs: Any) -> Any:
        if keep:
            kwargs["release"] = False
        res = real(*args, **kwargs)
        emptied.append(all(not s.blocks for s in kwargs["loaded"].steps))
        return res

    monkeypatch.setattr(cold_api, "fold_session", fold)
    data = fork_session(repo.path, transcript).data
    state = repo.path / ".contextfork"
    files = {str(p.relative_to(state)): p.read_bytes() for p in sorted(state.rglob("*"))
             if p.is_file()}  # fmt: skip
    fork = Path(str(data["fork"]))
    files["<fork>"] = fork.read_bytes()
    shutil.rmtree(state)
    fork.unlink()
    return data, files, emptied == [True]


def _recorded(transcripts_dir: Path, name: str, tmp_path: Path) -> Path:
    src = transcripts_dir / "claude-code" / name
    dst = tmp_path / "proj" / name
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    return dst


@pytest.mark.parametrize("name", ["fixture", "tool_heavy.jsonl", "subagent.jsonl"])
def test_a_fork_that_lets_the_blocks_go_writes_the_same_bytes(
    name: str, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if name == "fixture":
        t = cc_fixture.write(tmp_path / "proj" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    else:
        t = _recorded(request.getfixturevalue("transcripts_dir"), name, tmp_path)
    data, files, emptied = _fork(repo, t, monkeypatch, keep=False)
    assert data["stubbed"], data
    assert emptied, "the fold left blocks in the fork's session"
    want_data, want, kept_emptied = _fork(repo, t, monkeypatch, keep=True)
    assert not kept_emptied
    assert data == want_data
    assert files.keys() == want.keys()
    assert [k for k in files if files[k] != want[k]] == []
    assert any(k.startswith("cold/") and "/cold_nodes/" in k for k in files)
    assert any(k.startswith("packages/") for k in files)
