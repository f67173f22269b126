"""Restores come from the cold store: every removal stored, re-read verified, byte-exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.cold.layout import StoreLayout, layout_at, policy_sha256
from contextfork.cold.node import build_node, node_bytes
from contextfork.cold.stepkeys import KeyConflict
from contextfork.cold.store import load_policy, read_node
from contextfork.errors import IntegrityError
from contextfork.render.api import call_steps, make_renderer, render
from contextfork.render.coldsource import (
    ColdSource,
    persist_steps,
    render_session_id,
    step_payload,
)
from contextfork.render.engine import View
from contextfork.render.messages import original_step_text, step_messages
from contextfork.render.policies import policy
from contextfork.render.replay import verify_removals
from contextfork.render.restore import Request, answer
from contextfork.render.store import removal_bytes
from contextfork.transcript.model import Session, ToolResult
from tests.helpers import Repo, cli
from tests.render.builders import long_session, session, step
from tests.render.test_restore_replay import _write_session


def _store(tmp_path: Path, s: Session, view: View) -> StoreLayout:
    layout = layout_at(tmp_path / "cold" / render_session_id(s))
    persist_steps(layout, s, {rm.step for rm in view.removals})
    return layout


def test_every_removal_of_every_dev_session_restores_exactly_from_the_cold_store(
    transcripts_dir: Path, tmp_path: Path
) -> None:
    from contextfork.transcript import load_session

    checked = folds = 0
    for path in sorted(transcripts_dir.glob("*/*.json*")):
        s = load_session(path)
        layout = layout_at(tmp_path / "cold" / render_session_id(s, path))
        for name in ("refold", "epoch"):
            r = make_renderer(s, policy(name))
            view = None
            for t in call_steps(s):
                view = r.advance(t)
            if view is None or not view.removals:
                continue
            first = persist_steps(layout, s, {rm.step for rm in view.removals})
            source = ColdSource(layout)  # a fresh reader: every node re-read and re-verified
            assert verify_removals(s, view.removals, source) == [], path.name
            for rm in view.removals:
                assert len(removal_bytes(rm, source)) == rm.nbytes
                assert source.redactions(rm.step) == 0  # nothing in the dev set is a secret
            for fid, steps in view.folds.items():
                out = answer(Request("restore", fid), source, view.step_sha256, view.folds)
                originals = "".join(original_step_text(step_messages(s.steps[i - 1]))
                                    for i in steps)
                assert out.split("\n", 1)[1] == originals
                folds += 1
            checked += len(view.removals)
            again = persist_steps(layout, s, {rm.step for rm in view.removals})
            assert again.written == 0 and again.unchanged == len(first.steps)  # idempotent
    assert checked > 1000 and folds > 100  # policies now adapt: fewer, larger removals


def test_a_stub_is_sliced_from_its_block_in_the_stored_step() -> None:
    s = long_session(12)
    for st in s.steps:
        sm = step_messages(st)
        text, blocks = step_payload(sm)
        assert text == original_step_text(sm)
        for m in sm.body:
            a, z = blocks[str(m.block)]
            assert text[a:z] == m.content


def test_rerendering_reuses_nodes_and_a_different_history_is_refused(tmp_path: Path) -> None:
    s = long_session(20)
    refold = render(s, 20, policy("refold", adaptive=False))
    layout = _store(tmp_path, s, refold)
    epoch = render(s, 20, policy("epoch", budget_tokens=6000, adaptive=False))  # other policy, other removals
    steps = {rm.step for rm in epoch.removals}
    rep = persist_steps(layout, s, steps)  # only steps refold left alone are new
    assert rep.written == len(steps - {rm.step for rm in refold.removals})
    assert rep.unchanged == len(steps) - rep.written > 0
    rep = persist_steps(layout, s, steps)
    assert rep.written == 0 and rep.unchanged == len(steps)
    blk = s.steps[4].blocks[-1]
    assert isinstance(blk, ToolResult)
    blk.content += "changed\n"
    with pytest.raises(KeyConflict):  # a complete step's key with other bytes: integrity error
        persist_steps(layout, s, [5])


def test_a_tampered_node_is_refused_and_a_consistent_forgery_fails_the_removal_sha(
    tmp_path: Path,
) -> None:
    s = long_session(20)
    view = render(s, 20, policy("refold", adaptive=False))
    layout = _store(tmp_path, s, view)
    stub = next(rm for rm in view.removals if rm.kind == "stub")
    path = layout.node_path(stub.step)
    good = path.read_bytes()
    i = good.index(b"value_")
    path.write_bytes(good[:i] + b"V" + good[i + 1 :])  # one byte flipped inside the content
    with pytest.raises(IntegrityError):
        removal_bytes(stub, ColdSource(layout))
    with pytest.raises(IntegrityError):
        answer(Request("restore", str(stub.step)), ColdSource(layout), view.step_sha256)
    # A forged node whose own hashes agree: the removal's sha256 from render time still refuses.
    node = json.loads(good)
    forged_text = node["content"].replace("value_", "VALUE_")
    forged = build_node(session_id=layout.session_id, step_id=stub.step, summary="x",
                        payload=forged_text.encode(), policy_sha256=policy_sha256(
                            load_policy(layout)), source=node["source"])
    path.write_bytes(node_bytes(forged))
    with pytest.raises(IntegrityError, match="index recorded"):  # the store's index refuses it
        read_node(layout, stub.step)
    # Without its index row (an orphan, served on its own hashes per CONF-12) the store itself
    # is fooled; the removal's sha256 from render time still refuses.
    import sqlite3

    conn = sqlite3.connect(layout.sqlite)
    conn.execute("DELETE FROM nodes WHERE step_id=?", (stub.step,))
    conn.commit()
    conn.close()
    assert read_node(layout, stub.step)["content"] == forged_text
    with pytest.raises(IntegrityError, match="does not verify"):
        removal_bytes(stub, ColdSource(layout))
    with pytest.raises(IntegrityError):
        answer(Request("restore", str(stub.step)), ColdSource(layout), view.step_sha256)


def test_a_secret_is_never_stored_and_its_restore_says_it_was_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
    env = f"GITHUB_TOKEN={token}\nDEBUG=1\n" + "".join(f"SETTING_{i}=value {i}\n" for i in range(60))
    steps = [step(1, "Looking.", "cat .env", env, prompt="Go")]  # long enough to be worth a fold
    steps += [step(i, f"Step {i}.", f"echo {i}", f"{i}\n") for i in range(2, 12)]
    s = session(steps)
    view = render(s, 12, policy("refold", adaptive=False))
    assert any(rm.step == 1 for rm in view.removals)
    layout = _store(tmp_path, s, view)
    assert token.encode() not in layout.node_path(1).read_bytes()
    out = answer(Request("restore", "1"), ColdSource(layout), view.step_sha256, view.folds)
    assert "secret span(s) redacted" in out and "[REDACTED:" in out and token not in out
    assert "DEBUG=1" in out


def test_cli_restore_reads_the_cold_store_and_a_flipped_byte_exits_3(
    repo: Repo, tmp_path: Path
) -> None:
    p = _write_session(tmp_path)
    args = ("render", "--transcript", str(p), "--step", "9", "--repo", str(repo.path))
    r = cli(*args, "--restore", "3", "--json")
    assert r.returncode == 0, r.stderr
    data = r.json()["data"]
    assert data["cold_store"]["steps"] == 8 and "verified" in data["answer"]
    store = Path(data["cold_store"]["store"])
    assert store.parent == repo.path / ".contextfork" / "cold" and store.name.endswith("-render")
    r = cli(*args, "--peek", "3", "--offset", "0", "--bytes", "12")
    assert r.returncode == 0 and "bytes 0-12" in r.stdout
    node = store / "cold_nodes" / "step_000003.json"
    raw = node.read_bytes()
    i = raw.index(b"value_")
    node.write_bytes(raw[:i] + b"X" + raw[i + 1 :])
    r = cli(*args, "--restore", "3")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "tampered" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("target", ["xx", "F", "Fx", "-1", "3.5"])
def test_cli_peek_with_a_malformed_target_is_a_usage_error(
    repo: Repo, tmp_path: Path, target: str
) -> None:
    p = _write_session(tmp_path)
    r = cli("render", "--transcript", str(p), "--step", "9", "--repo", str(repo.path),
                "--peek", target)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "internal error" not in r.stderr and r.stderr.count("\n") <= 2
