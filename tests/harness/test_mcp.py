"""The MCP server through mcp's own client: in-process and as a real stdio subprocess."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from contextfork.cold.scenario import REFERENCE_QUESTION, build_reference_scenario
from contextfork.harness.mcp.server import build_server
from tests.helpers import Repo, clean_env, run_cli

SID = "mcp-session"
TOOLS = {
    "get_context_status",
    "export_session_context",
    "validate_session_context",
    "resume_session_context",
    "get_package_details",
    "clean_session_context",
    "read_handoff_summary",
    "scan_context",
    "hydrate_step",
    "peek_fold",
    "get_slice",
    "contextfork_context",
}


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _env(result: Any) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    data: dict[str, Any] = json.loads(_text(result))
    assert data["envelope_version"] == "1"
    return data


async def _calls(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    out = []
    async with Client(server) as client:
        out.append(await client.list_tools())
        for name, args in calls:
            out.append(await client.call_tool(name, args))
    return out


def run_calls(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    result: list[Any] = []

    async def main() -> None:
        result.extend(await _calls(server, calls))

    anyio.run(main)
    return result


@pytest.fixture
def allowed(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", str(repo.path))
    monkeypatch.chdir(repo.path)
    build_reference_scenario(repo.path / ".contextfork" / "cold" / SID)
    return repo


def test_in_process_client_lists_and_calls_every_tool(allowed: Repo) -> None:
    ws = str(allowed.path)
    parts = {
        "active_goal": {
            "goal": "Port billing to the new currency API",
            "acceptance_criteria": ["tests/test_billing.py passes"],
        },
        "failed_approaches": [
            {
                "approach": "bumping the port to 5434",
                "barred_action": "move PostgreSQL off 5433 again",
                "step": 2,
            }
        ],
        "next_action": {"action": "re-run the billing tests", "command": "pytest -q"},
    }
    res = run_calls(
        build_server(),
        [
            ("export_session_context", {"workspace": ws, **parts}),
            ("validate_session_context", {"workspace": ws}),
            ("get_package_details", {"workspace": ws}),
            ("read_handoff_summary", {"workspace": ws}),
            ("get_context_status", {"workspace": ws}),
            ("scan_context", {"workspace": ws, "session_id": SID, "prompt": REFERENCE_QUESTION}),
            ("hydrate_step", {"workspace": ws, "session_id": SID, "step": 1}),
            (
                "peek_fold",
                {"workspace": ws, "session_id": SID, "step": 7, "offset": 0, "length": 40},
            ),
            ("resume_session_context", {"workspace": ws, "session_id": "next-session"}),
            ("clean_session_context", {"workspace": ws, "keep": 0}),
        ],
    )
    tools = {t.name for t in res[0].tools}
    assert tools == TOOLS
    schema = next(t for t in res[0].tools if t.name == "export_session_context").input_schema
    assert {
        "active_goal",
        "settled_decisions",
        "failed_approaches",
        "open_risks",
        "next_action",
    } <= set(schema["properties"])
    export = _env(res[1])["data"]
    assert export["valid"] is True
    assert "/settled_decisions/0/decision" in export["unfilled"]
    assert not any(u.startswith("/active_goal/goal") for u in export["unfilled"])
    assert _env(res[2])["data"]["valid"] is True
    details = _env(res[3])["data"]
    assert details["metadata"]["trigger"] == "mcp"
    assert (
        details["handoff"]["failed_approaches"][0]["barred_action"]
        == "move PostgreSQL off 5433 again"
    )
    assert "move PostgreSQL off 5433 again" in _env(res[4])["data"]["markdown"]
    assert _env(res[5])["command"] == "status"
    scan = _env(res[6])["data"]
    assert [s["step_id"] for s in scan["selected"]] == [7, 5, 4]  # selection order
    hyd = _env(res[7])["data"]
    assert hyd["verified"] is True and "5433" in hyd["content"]
    peek = _env(res[8])["data"]
    assert peek["length"] == 40 and peek["more"] is True
    resumed = _env(res[9])["data"]
    assert resumed["valid"] is True and "brief" in resumed
    cleaned = res[10]
    assert not cleaned.is_error, _text(cleaned)
    assert (allowed.path / ".contextfork" / "packages" / export["package_id"]).is_dir()  # dry run


def test_paths_outside_traversing_or_through_symlinks_are_refused(
    allowed: Repo, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (allowed.path / "link").symlink_to(outside)
    (allowed.path / "inner").mkdir()
    (allowed.path / "inner_link").symlink_to(allowed.path / "inner")
    ws = str(allowed.path)
    res = run_calls(
        build_server(),
        [
            ("validate_session_context", {"workspace": f"{ws}/../elsewhere"}),
            ("validate_session_context", {"workspace": str(outside)}),
            ("validate_session_context", {"workspace": f"{ws}/link"}),
            (
                "scan_context",
                {"workspace": f"{ws}/inner_link", "session_id": SID, "prompt": "port"},
            ),
            ("read_handoff_summary", {"workspace": ws, "package": "../../../etc"}),
            ("peek_fold", {"workspace": ws, "session_id": "../" + SID, "step": 1}),
            ("get_context_status", {"workspace": ws, "transcript_path": "/etc/passwd"}),
            ("export_session_context", {"workspace": "/"}),
        ],
    )
    for r, why in zip(
        res[1:],
        ["'..'", "outside", "symlink", "symlink", "'..'", "plain name", "outside", "outside"],
        strict=True,
    ):
        assert r.is_error
        assert why in _text(r), _text(r)
    assert not (outside / ".contextfork").exists()


def test_an_invalid_allow_list_refuses_every_call(
    allowed: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTFORK_ALLOWED_ROOTS", f"{allowed.path};relative/dir")
    res = run_calls(
        build_server(), [("validate_session_context", {"workspace": str(allowed.path)})]
    )
    assert res[1].is_error and "whole variable is rejected" in _text(res[1])


def test_a_real_stdio_subprocess_serves_the_tools(allowed: Repo) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextfork", "mcp"],
        cwd=str(allowed.path),
        env={
            **clean_env(),
            "CONTEXTFORK_ALLOWED_ROOTS": str(allowed.path),
            "PYTHONPATH": os.pathsep.join(sys.path),
        },
    )
    with open(os.devnull, "w") as devnull:
        res: list[Any] = []

        async def main() -> None:
            from mcp.client.stdio import stdio_client

            async with Client(stdio_client(params, errlog=devnull)) as client:
                res.append(await client.list_tools())
                res.append(
                    await client.call_tool(
                        "scan_context", {"session_id": SID, "prompt": REFERENCE_QUESTION}
                    )
                )
                res.append(
                    await client.call_tool("validate_session_context", {"workspace": "/etc"})
                )

        anyio.run(main)
    assert {t.name for t in res[0].tools} == TOOLS
    assert [s["step_id"] for s in _env(res[1])["data"]["selected"]] == [7, 5, 4]
    assert res[2].is_error and "outside the allowed roots" in _text(res[2])


def test_mcp_is_never_imported_by_the_cli_or_hooks(repo: Repo) -> None:
    res = run_cli("hooks", "run", "--help", cwd=repo.path)
    assert res.returncode == 0 and "user-prompt-submit" in res.stdout
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "contextfork", "fork", "--help"],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=False,
    )
    assert proc.returncode == 0
    assert not [
        ln for ln in proc.stderr.splitlines() if ln.rsplit("|", 1)[-1].strip().startswith("mcp")
    ]
