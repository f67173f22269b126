"""The proxy's edit on real recorded Claude Code sessions: what it may change and what never.

Every model call of each recorded session is sent through ``adapt`` in order, as Claude Code
sent it (``recorded.body_of``), and every body the proxy would forward is checked against the
request it came from: outside ``messages`` not one byte differs; each message out is either one
of the request's messages byte for byte, a fold note, or one of them with only the parts of a
folded step removed or a tool result's content stubbed (every other part byte-identical); tool
pairs stay valid; no breakpoint is added or left on a removed part; each step whose call left
the prompt is in the cold store, verified, before the body that removes it exists; and the
prefix changes only where the renderer moved its boundary or committed an epoch.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from contextfork.proxy import anthropic, jsonspan
from contextfork.proxy.adapt import adapt
from contextfork.proxy.conversation import Registry
from tests.helpers import Repo, make_repo
from tests.proxy.recorded import body_of, requests_of

SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d.jsonl", "subagent.jsonl")


def _messages(body: bytes) -> tuple[str, list[str], list[Any], tuple[int, int]]:
    text = body.decode("utf-8")
    top, items, _ = jsonspan.document(text, "messages")
    return text, [text[a:b] for _, (a, b) in items], [v for v, _ in items], top["messages"][1]


def _parts(raw: str) -> list[str]:
    top, _ = jsonspan.members(raw)
    if "content" not in top or not isinstance(top["content"][0], list):
        return []
    items, _ = jsonspan.elements(raw, top["content"][1][0])
    return [raw[a:b] for _, (a, b) in items]


def _check_one(body_in: bytes, body_out: bytes) -> dict[str, int]:
    """Assert the invariants of one forwarded body; count what it changed."""
    t_in, raws_in, vals_in, span_in = _messages(body_in)
    t_out, raws_out, vals_out, span_out = _messages(body_out)
    assert t_in[: span_in[0]] == t_out[: span_out[0]], "bytes before messages changed"
    assert t_in[span_in[1] :] == t_out[span_out[1] :], "bytes after messages changed"
    known = set(raws_in)
    all_parts = {p for r in raws_in for p in _parts(r)}
    seen = {"kept": 0, "notes": 0, "edited": 0}
    for raw, val in zip(raws_out, vals_out, strict=True):
        if raw in known:
            seen["kept"] += 1
            continue
        parts = val["content"]
        if (val["role"] == "user" and len(parts) == 1
                and str(parts[0].get("text", "")).startswith("[contextfork note: folded")):
            seen["notes"] += 1
            continue
        seen["edited"] += 1
        for part_raw, part in zip(_parts(raw), parts, strict=True):
            if part_raw in all_parts:
                continue
            assert part["type"] == "tool_result", f"a non-result part changed: {part_raw[:200]}"
            assert isinstance(part["content"], str), part_raw[:200]
    assert anthropic.pair_faults(vals_out) <= anthropic.pair_faults(vals_in)
    assert anthropic.breakpoints(raws_out) <= anthropic.breakpoints(raws_in)
    ids_out = {p["id"] for m in vals_out for p in anthropic.parts_of(m)
               if isinstance(p, dict) and p.get("type") == "tool_use"}
    ids_in = {p["id"] for m in vals_in for p in anthropic.parts_of(m)
              if isinstance(p, dict) and p.get("type") == "tool_use"}
    assert ids_out <= ids_in
    return seen


def _drive(calls: list[list[dict[str, Any]]], root: Path) -> list[tuple[bytes, Any]]:
    reg, api = Registry(), anthropic.api()
    out = []
    for msgs in calls:
        body = body_of(msgs)
        res = adapt(api, reg, root, {}, body, deadline=time.monotonic() + 60)
        out.append((body, res))
    return out


@pytest.fixture(scope="module")
def long_session(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, Any]]:
    """The long recorded session (152 calls, default policy) through the proxy, once."""
    from tests.helpers import TRANSCRIPTS

    path = TRANSCRIPTS / "claude-code" / SESSIONS[0]
    if not path.exists():
        pytest.skip("../shared/data/transcripts is absent (a user's clone has no ../shared)")
    repo = make_repo(tmp_path_factory.mktemp("long") / "repo")
    return _drive(requests_of(path), repo.path)


@pytest.mark.parametrize("name", SESSIONS)
def test_a_recorded_session_through_the_proxy_keeps_every_invariant(
        name: str, transcripts_dir: Path, repo: Repo, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    path = transcripts_dir / "claude-code" / name
    if not path.exists():
        pytest.skip(f"{name} is not among the recorded transcripts")
    if name == SESSIONS[0]:
        results = request.getfixturevalue("long_session")
    else:  # a short session: fold from the first boundary move
        monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
        monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "2000")
        calls = requests_of(path)
        assert len(calls) >= 10
        results = _drive(calls, repo.path)

    edited = [(b, r) for b, r in results if r.body is not None]
    assert edited, "the proxy never folded anything in this session"
    assert [r.why for _, r in results if r.why] == []
    notes = 0
    for body, res in edited:
        seen = _check_one(body, res.body)
        notes += seen["notes"]
    assert notes > 0


def test_the_prefix_changes_only_at_a_boundary_move_or_an_epoch(
        long_session: list[tuple[bytes, Any]]) -> None:
    prev: list[str] | None = None
    prev_info: dict[str, Any] = {}
    rewrites = moves = 0
    for body, res in long_session:
        sent = res.body if res.body is not None else body
        _, raws, _, _ = _messages(sent)
        info = res.info
        if prev is not None and info.get("sync") == "append":
            moved = (info.get("boundary") != prev_info.get("boundary")
                     or info.get("epochs") != prev_info.get("epochs"))
            moves += moved
            # the last message of the previous call loses its breakpoint: compare the rest
            stable = prev[:-1] == raws[: len(prev) - 1]
            if not stable:
                rewrites += 1
                assert moved, f"prefix rewritten at t={info.get('t')} without a boundary move"
        prev, prev_info = raws, info
    assert moves > 0 and rewrites <= moves


def test_each_folded_step_reads_back_verified_from_the_cold_store(
        transcripts_dir: Path, repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "2000")
    calls = requests_of(transcripts_dir / "claude-code" / "subagent.jsonl")
    reg, api = Registry(), anthropic.api()

    from contextfork.cold.keyed import latest_version
    from contextfork.cold.store import read_node

    checked = 0
    for msgs in calls:
        body = body_of(msgs)
        res = adapt(api, reg, repo.path, {}, body, deadline=time.monotonic() + 60)
        if res.body is None:
            continue
        sess = res.conv.session
        view = sess.last_view
        layout = sess.layout()
        folded = {s for steps in view.folds.values() for s in steps}
        for step in folded:  # stored before the body existed: readable now, same bytes
            node = read_node(layout, sess.cold_ids.get(step) or latest_version(layout, step))
            assert node["source"]["step_sha256"] == view.step_sha256[step]
            checked += 1
    assert checked > 0


def test_a_request_with_a_duplicated_key_is_forwarded_untouched(repo: Repo) -> None:
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"model":"n"}'

    res = adapt(anthropic.api(), Registry(), repo.path, {}, body, deadline=time.monotonic() + 5)

    assert res.body is None and res.why and "duplicate key" in res.why


def test_subagents_of_one_session_are_never_mixed(repo: Repo) -> None:
    reg, api = Registry(), anthropic.api()
    sid = "0b5f7a8e-1111-4222-8333-944455556666"
    main = [{"role": "user", "content": [{"type": "text", "text": "main task"}]}]
    sub = [{"role": "user", "content": [{"type": "text", "text": "sub task"}]}]
    headers_main = {"x-claude-code-session-id": sid}
    headers_sub = {"x-claude-code-session-id": sid, "x-claude-code-agent-id": "a1b2"}

    r1 = adapt(api, reg, repo.path, headers_main, body_of(main), deadline=time.monotonic() + 5)
    r2 = adapt(api, reg, repo.path, headers_sub, body_of(sub), deadline=time.monotonic() + 5)
    r3 = adapt(api, reg, repo.path, headers_main, body_of(main), deadline=time.monotonic() + 5)

    assert r1.conv is r3.conv and r1.conv is not r2.conv
    assert r1.info["sync"] == "append" and r3.info["sync"] == "append"
    assert r1.conv.session.session_id == sid
    assert r2.conv.session.session_id != sid
    assert [m["content"][0]["text"] for m in r2.conv.session.live.messages] == ["sub task"]
