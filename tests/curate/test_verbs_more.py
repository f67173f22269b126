from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.cold.api import fold_session
from contextfork.cold.decisions import load_decisions
from contextfork.cold.layout import layout_for
from contextfork.curate.api import run_verb
from contextfork.errors import IntegrityError
from contextfork.hashing import sha256_bytes
from tests.curate.conftest import SESSION
from tests.helpers import Repo


def test_peek_returns_the_exact_stored_bytes_verified(folded: Path) -> None:
    node_path = layout_for(folded, SESSION).node_path(3)
    node = json.loads(node_path.read_text())
    res = run_verb(folded, SESSION, "peek", {"step": 3, "max_chars": 100})
    whole = node["content"].encode("utf-8")
    assert res.data["text"].encode("utf-8") == whole[:100]
    assert res.data["payload_sha256"] == sha256_bytes(whole)
    assert res.data["slice_sha256"] == sha256_bytes(whole[:100])
    assert res.data["next_offset"] == 100 and res.data["verified"] is True
    rest = run_verb(folded, SESSION, "peek", {"step": 3, "offset": 100, "max_chars": 20000})
    assert (res.data["text"] + rest.data["text"]).encode("utf-8") == whole
    assert rest.data["next_offset"] is None


def test_peek_is_ephemeral_unless_recorded(folded: Path) -> None:
    run_verb(folded, SESSION, "peek", {"step": 3})
    assert load_decisions(folded, SESSION).empty
    res = run_verb(folded, SESSION, "peek", {"step": 3, "record": True})
    assert res.data["recorded"] is True
    assert load_decisions(folded, SESSION).expanded == {res.data["key"]}


def test_peek_of_a_tampered_node_is_refused(folded: Path) -> None:
    node_path = layout_for(folded, SESSION).node_path(3)
    node = json.loads(node_path.read_text())
    node["content"] = node["content"].replace("line 1", "line X")
    node_path.write_text(json.dumps(node))
    with pytest.raises(IntegrityError):
        run_verb(folded, SESSION, "peek", {"step": 3})


def test_peek_readable_view_shows_the_nodes_readable_form(folded: Path) -> None:
    res = run_verb(folded, SESSION, "peek", {"step": 3, "view": "readable", "max_chars": 20000})
    node = json.loads(layout_for(folded, SESSION).node_path(3).read_text())
    assert res.data["view"] == "readable"
    assert res.data["text"] == node["readable"]


def test_expand_then_refold_round_trips(folded: Path) -> None:
    run_verb(folded, SESSION, "expand", {"steps": [2, 3]})
    assert len(load_decisions(folded, SESSION).expanded) == 2
    run_verb(folded, SESSION, "refold", {"step": 2})
    assert len(load_decisions(folded, SESSION).expanded) == 1
    run_verb(folded, SESSION, "refold", {"step": 3})
    assert load_decisions(folded, SESSION).empty


def test_brief_is_kept_verbatim_with_secrets_redacted(folded: Path) -> None:
    words = "Parts 2–3: ports checked; «nothing» changed.\nSecond line stays."
    run_verb(folded, SESSION, "brief", {"steps": [2, 3], "text": words})
    b = next(iter(load_decisions(folded, SESSION).briefs.values()))
    assert b.text == words and b.redactions == 0 and len(b.keys) == 2
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    run_verb(folded, SESSION, "brief", {"step": 2, "text": f"token was {secret} (rotated)"})
    d = load_decisions(folded, SESSION)
    assert len(d.briefs) == 1  # the new brief on step 2 replaced the overlapping one
    b = next(iter(d.briefs.values()))
    assert secret not in b.text and b.redactions == 1 and b.text.startswith("token was ")


def test_reboundary_sets_and_clears_the_next_epoch_boundary(folded: Path) -> None:
    res = run_verb(folded, SESSION, "reboundary", {"step": 4})
    assert res.data["decisions"]["boundary"]["step"] == 4
    assert "before step 4" in (run_verb(folded, SESSION, "status", {}).text or "")
    run_verb(folded, SESSION, "reboundary", {"clear": True})
    assert load_decisions(folded, SESSION).boundary is None


def test_unmark_drops_every_decision_on_a_step_or_only_one_kind(folded: Path) -> None:
    run_verb(folded, SESSION, "pin", {"step": 2})
    run_verb(folded, SESSION, "expand", {"step": 2})
    run_verb(folded, SESSION, "brief", {"step": 2, "text": "two"})
    run_verb(folded, SESSION, "reboundary", {"step": 2})
    run_verb(folded, SESSION, "unmark", {"step": 2, "kind": "pin"})
    d = load_decisions(folded, SESSION)
    assert not d.pinned and d.expanded and d.briefs and d.boundary
    run_verb(folded, SESSION, "unmark", {"step": 2})
    assert load_decisions(folded, SESSION).empty
    run_verb(folded, SESSION, "reboundary", {"step": 3})
    run_verb(folded, SESSION, "unmark", {"kind": "boundary"})
    assert load_decisions(folded, SESSION).empty


def test_pin_survives_a_refold_of_the_grown_session(folded: Path, transcript: Path) -> None:
    """Decisions are keyed: folding the session again after it grew keeps them on their steps."""
    run_verb(folded, SESSION, "pin", {"step": 3})
    key = load_decisions(folded, SESSION).pinned
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "uuid": "u-late", "parentUuid": "u15",
                             "sessionId": SESSION, "message": {"role": "user", "content": "more"},
                             "timestamp": "2026-02-10T11:00:00.000Z"}) + "\n")
    fold_session(transcript, repo=folded, session=SESSION)
    st = run_verb(folded, SESSION, "status", {}).data
    assert [s["step"] for s in st["steps"] if s["pinned"]] == [3]
    assert {s["key"] for s in st["steps"] if s["pinned"]} == key


def test_verbs_on_a_recorded_claude_code_session(repo: Repo, transcripts_dir: Path) -> None:
    fold_session(transcripts_dir / "claude-code" / "tool_heavy.jsonl", repo=repo.path, session="real")
    st = run_verb(repo.path, "real", "status", {}).data
    assert len(st["steps"]) > 3
    mid = st["steps"][len(st["steps"]) // 2]
    run_verb(repo.path, "real", "pin", {"key": mid["key"]})
    peeked = run_verb(repo.path, "real", "peek", {"key": mid["key"], "max_chars": 500})
    assert peeked.data["step"] == mid["step"] and len(peeked.data["text"]) <= 500
    after = run_verb(repo.path, "real", "status", {}).data
    assert [s["key"] for s in after["steps"] if s["pinned"]] == [mid["key"]]


def test_verbs_on_the_recorded_pi_session(repo: Repo, transcripts_dir: Path) -> None:
    fold_session(transcripts_dir / "pi" / "large-session.jsonl", repo=repo.path, session="pi1")
    st = run_verb(repo.path, "pi1", "status", {}).data
    assert len(st["steps"]) > 10
    run_verb(repo.path, "pi1", "brief", {"steps": [2, 5], "text": "setup done"})
    d = run_verb(repo.path, "pi1", "status", {}).data
    assert [s["brief"] is not None for s in d["steps"][:6]] == [False, True, True, True, True, False]


def test_peek_is_bounded_by_a_token_budget_too(folded: Path) -> None:
    from contextfork.tokens import count_tokens

    res = run_verb(folded, SESSION, "peek", {"step": 3, "max_tokens": 25, "max_chars": 20000})
    whole = json.loads(layout_for(folded, SESSION).node_path(3).read_text())["content"]
    assert 0 < count_tokens(res.data["text"]) <= 25
    assert whole.startswith(res.data["text"]) and res.data["next_offset"] == res.data["end"]
