"""peek_fold reads the renderer's store (<session>-render) too, through the in-process client."""

from __future__ import annotations

import json

import pytest

from contextfork.cold.layout import StoreLayout, layout_at
from contextfork.cold.store import read_node
from contextfork.harness.mcp.server import build_server
from contextfork.harness.sample_session import write_transcript
from contextfork.render.coldsource import ColdSource
from tests.harness.test_mcp import _env, _text, run_calls
from tests.helpers import Repo, cli

SID = "render-sess"


@pytest.fixture
def rendered(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A real repo whose transcript was rendered by the CLI: originals in <SID>-render only."""
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    monkeypatch.chdir(repo.path)
    write_transcript(repo.path / "t.jsonl", repo.path)
    res = cli("render", "--transcript", "t.jsonl", "--session", SID, "--json", cwd=repo.path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["cold_store"]["session_id"] == f"{SID}-render"
    assert not (repo.path / ".contextfork" / "cold" / SID).exists()
    return repo


def _layout(repo: Repo) -> StoreLayout:
    return layout_at(repo.path / ".contextfork" / "cold" / f"{SID}-render")


def _source(repo: Repo) -> ColdSource:
    return ColdSource(_layout(repo))


def test_peek_falls_back_to_the_render_store_and_reads_a_block(rendered: Repo) -> None:
    ws = str(rendered.path)
    src = _source(rendered)
    blocks = read_node(_layout(rendered), 2)["source"]["blocks"]
    block = int(next(iter(blocks)))
    res = run_calls(
        build_server(),
        [
            ("peek_fold", {"workspace": ws, "session_id": SID, "step": 2, "length": 100000}),
            (
                "peek_fold",
                {"workspace": ws, "session_id": SID, "step": 2, "store": "render", "block": block},
            ),
            (
                "peek_fold",
                {
                    "workspace": ws,
                    "session_id": f"{SID}-render",
                    "step": 2,
                    "store": "render",
                    "offset": 5,
                    "length": 10,
                },
            ),
            ("peek_fold", {"workspace": ws, "session_id": SID, "step": 2, "store": "fold"}),
            ("hydrate_step", {"workspace": ws, "session_id": SID, "step": 2}),
            ("peek_fold", {"workspace": ws, "session_id": SID, "step": 999, "store": "auto"}),
        ],
    )
    auto = _env(res[1])["data"]
    assert auto["store"] == "render" and auto["store_session"] == f"{SID}-render"
    assert auto["content"] == src.step_text(2) and auto["more"] is False
    assert auto["verified"] is True and len(auto["payload_sha256"]) == 64
    one = _env(res[2])["data"]
    assert one["block"] == block and one["content"] == src.block_text(2, block)
    assert _env(res[3])["data"]["content"] == src.step_text(2)[5:15]
    assert res[4].is_error and "no cold store" in _text(res[4])
    assert res[5].is_error and 'store="render"' in _text(res[5])  # hydrate says where to look
    assert res[6].is_error and "step 999" in _text(res[6])


def test_auto_prefers_the_fold_store_and_render_is_asked_for_explicitly(rendered: Repo) -> None:
    res = cli("fold", "session", "--transcript", "t.jsonl", "--session", SID,
                  cwd=rendered.path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    ws = str(rendered.path)
    out = run_calls(
        build_server(),
        [
            ("peek_fold", {"workspace": ws, "session_id": SID, "step": 2, "length": 100000}),
            (
                "peek_fold",
                {
                    "workspace": ws,
                    "session_id": SID,
                    "step": 2,
                    "length": 100000,
                    "store": "render",
                },
            ),
            ("peek_fold", {"workspace": ws, "session_id": SID, "step": 2, "block": 0}),
        ],
    )
    fold = _env(out[1])["data"]
    assert fold["store"] == "fold" and fold["store_session"] == SID
    json.loads(fold["content"].splitlines()[0])  # the fold store keeps the raw transcript lines
    render = _env(out[2])["data"]
    assert render["store"] == "render" and render["content"] == _source(rendered).step_text(2)
    assert out[3].is_error and "only in render originals" in _text(out[3])


def test_a_tampered_render_node_is_refused_not_skipped(rendered: Repo) -> None:
    nodes = rendered.path / ".contextfork" / "cold" / f"{SID}-render" / "cold_nodes"
    node = nodes / "step_000002.json"
    raw = json.loads(node.read_text())
    raw["content"] = raw["content"].replace("a", "b", 1)
    node.write_text(json.dumps(raw))
    res = run_calls(
        build_server(),
        [("peek_fold", {"workspace": str(rendered.path), "session_id": SID, "step": 2})],
    )
    assert res[1].is_error and "IntegrityError" in _text(res[1])


def test_peek_refuses_a_traversing_session_for_either_store(rendered: Repo) -> None:
    res = run_calls(
        build_server(),
        [
            (
                "peek_fold",
                {
                    "workspace": str(rendered.path),
                    "session_id": "../x",
                    "step": 1,
                    "store": "render",
                },
            )
        ],
    )
    assert res[1].is_error and "plain name" in _text(res[1])
