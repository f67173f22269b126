"""contextfork_context through mcp's own client (in-process and a real stdio subprocess)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from contextfork.cold.decisions import load_decisions
from contextfork.harness.mcp.server import build_server
from tests.curate.conftest import SESSION
from tests.harness.test_mcp import _env, _text, run_calls
from tests.helpers import clean_env


@pytest.fixture
def ws(folded: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(folded))
    monkeypatch.chdir(folded)
    return str(folded)


def test_the_mcp_tool_runs_every_verb(ws: str) -> None:
    def call(verb: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return ("contextfork_context", {"workspace": ws, "session_id": SESSION, "verb": verb,
                                        "args": args})

    res = run_calls(build_server(), [
        call("pin", {"steps": [2, 3]}),
        call("expand", {"step": 4}),
        call("refold", {"step": 4}),
        call("brief", {"step": 5, "text": "five: checked"}),
        call("reboundary", {"step": 6}),
        call("unmark", {"step": 6}),
        call("unpin", {"step": 3}),
        call("peek", {"step": 2, "max_chars": 30}),
        call("status", {}),
    ])
    envs = [_env(r) for r in res[1:]]
    assert [e["command"] for e in envs] == [
        "context pin", "context expand", "context refold", "context brief", "context reboundary",
        "context unmark", "context unpin", "context peek", "context status"]
    assert envs[7]["data"]["verified"] is True and len(envs[7]["data"]["text"]) == 30
    st = envs[8]["data"]
    assert [s["step"] for s in st["steps"] if s["pinned"]] == [2]
    assert [b["steps"] for b in st["decisions"]["briefs"]] == [[5]]
    assert st["decisions"]["boundary"] is None and not st["decisions"]["expanded"]
    d = load_decisions(Path(ws), SESSION)
    assert len(d.pinned) == 1 and len(d.briefs) == 1


def test_the_mcp_tool_reports_errors_as_one_line_tool_errors(ws: str) -> None:
    res = run_calls(build_server(), [
        ("contextfork_context", {"workspace": ws, "session_id": SESSION, "verb": "pin",
                                 "args": {"step": 99}}),
        ("contextfork_context", {"workspace": ws, "session_id": SESSION, "verb": "frob"}),
        ("contextfork_context", {"workspace": ws, "session_id": "../x", "verb": "status"}),
        ("contextfork_context", {"workspace": "/etc", "session_id": SESSION, "verb": "status"}),
    ])
    assert res[1].is_error and "NotFoundError: step 99 is not in the cold store" in _text(res[1])
    assert res[2].is_error and "unknown verb 'frob'" in _text(res[2])
    assert res[3].is_error and "not a plain name" in _text(res[3])
    assert res[4].is_error and "outside the allowed roots" in _text(res[4])
    assert all("\n" not in _text(r) for r in res[1:])


def test_a_real_stdio_subprocess_serves_contextfork_context(ws: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "contextfork", "mcp"], cwd=ws,
        env={**clean_env(), "CONTEXTFORK_ALLOWED_ROOTS": ws,
             "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    res: list[Any] = []

    async def main() -> None:
        from mcp.client.stdio import stdio_client

        with open(os.devnull, "w") as devnull:
            async with Client(stdio_client(params, errlog=devnull)) as client:
                res.append(await client.list_tools())
                res.append(await client.call_tool("contextfork_context", {
                    "session_id": SESSION, "verb": "pin", "args": {"step": 3}}))

    anyio.run(main)
    tool = next(t for t in res[0].tools if t.name == "contextfork_context")
    assert {"verb", "session_id", "args"} <= set(tool.input_schema["properties"])
    assert _env(res[1])["data"]["steps"] == [3]
    assert len(load_decisions(Path(ws), SESSION).pinned) == 1


def test_the_mcp_status_reads_a_transcript_only_inside_the_allowed_roots(
    ws: str, transcript: Path, tmp_path: Path
) -> None:
    inside = Path(ws) / "session.jsonl"
    inside.write_bytes(transcript.read_bytes())
    res = run_calls(build_server(), [
        ("contextfork_context", {"workspace": ws, "session_id": SESSION, "verb": "status",
                                 "args": {"transcript": str(inside)}}),
        ("contextfork_context", {"workspace": ws, "session_id": SESSION, "verb": "status",
                                 "args": {"transcript": str(transcript)}}),
    ])
    assert _env(res[1])["data"]["view"]["at_step"] >= 2
    assert res[2].is_error and "outside the allowed roots" in _text(res[2])
