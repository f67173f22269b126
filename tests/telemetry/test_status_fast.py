"""`status` reads a Claude Code file in one lean pass (telemetry/ccstatus.py): its report must be
the one the full path (the pydantic ``Session``) gives, on real and on hostile transcripts, and it
must hand every other format, and every line it does not reproduce, to the full path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextfork.forkstub import STUB_PREFIX
from contextfork.status import build_status
from contextfork.telemetry import ccstatus
from contextfork.telemetry.models import Policy
from contextfork.telemetry.status import facts, telemetry_of
from contextfork.transcript import load_session
from tests.helpers import run_cli
from tests.transcript import cc21
from tests.transcript.builders import CC, dumps, text, tool_use, write_jsonl
from tests.transcript.test_claude_code import build_session_file

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"


def _dump(parts: dict[str, Any]) -> Any:
    def one(v: Any) -> Any:
        if isinstance(v, list):
            return [one(x) for x in v]
        return v.model_dump(mode="json") if hasattr(v, "model_dump") else v

    return {k: one(v) for k, v in parts.items()}


def _full(path: Path) -> Any:
    return _dump(telemetry_of(facts(load_session(path)), Policy(), context_window=200_000))


def _fast(path: Path) -> Any:
    got = ccstatus.fast_facts(path)
    return None if got is None else _dump(telemetry_of(got, Policy(), context_window=200_000))


def assert_same(path: Path, *, fast: bool = True) -> None:
    """The fast report equals the full one (``fast``: and the fast path did answer)."""
    got = _fast(path)
    if not fast:
        assert got is None, "the fast path answered a file it should hand to the full path"
        return
    assert got is not None, "the fast path declined"
    assert got == _full(path)


def _shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"recorded transcripts not found ({path})")
    return path


@pytest.mark.parametrize(
    "name", ["258c7280-ae70-4798-800f-63464d01a85d.jsonl", "short.jsonl", "subagent.jsonl",
             "tool_heavy.jsonl"],
)  # fmt: skip
def test_the_recorded_claude_code_sessions_report_the_same_in_the_fast_pass(name: str) -> None:
    assert_same(_shared("claude-code", name))


def test_a_recorded_subagent_file_alone_is_left_to_the_full_path() -> None:
    """Every line is a sidechain: the fast pass does not cut those, the full path does."""
    folder = _shared("claude-code", "258c7280-ae70-4798-800f-63464d01a85d", "subagents")
    sub = sorted(folder.glob("*.jsonl"))[0]
    assert_same(sub, fast=False)


@pytest.mark.parametrize(
    "parts", [("pi", "large-session.jsonl"), ("codex", "sample_codex_session.jsonl"),
              ("mini-swe-agent", "django__django-16560.traj.json")],
)  # fmt: skip
def test_other_formats_are_left_to_the_full_path(parts: tuple[str, str]) -> None:
    assert_same(_shared(*parts), fast=False)


def test_rewinds_malformed_lines_progress_and_a_partial_tail_report_the_same(
    tmp_path: Path,
) -> None:
    assert_same(build_session_file(tmp_path / "s.jsonl"))


@pytest.mark.parametrize("kw", [{}, {"second_compaction": False}, {"grow": 3}])
def test_claude_code_2_1_preserved_segments_and_attachments_report_the_same(
    tmp_path: Path, kw: dict[str, Any]
) -> None:
    path = cc21.write(tmp_path / "s.jsonl", **kw)
    assert_same(path)
    full = _full(path)
    assert full["compactions"] and full["steps"]["since_compaction"] > 0


def _forked(tmp_path: Path, *, folded: bool) -> Path:
    """A fork's copied lines (``forkedFrom``), a folded result stub or not, then its own call."""
    cc = CC(session_id="fork-1")
    recs = [
        cc.user("start"),
        cc.assistant("m1", [tool_use("c1", "Bash", command="cat big.log")], usage=(5, 10, 9000, 40)),
        cc.result("c1", f"{STUB_PREFIX} — step 1, 9,000 chars" if folded else "x" * 900),
        cc.assistant("m2", [text("read it")], usage=(5, 10, 9900, 40)),
    ]
    for r in recs:
        r["forkedFrom"] = {"sessionId": "orig", "messageUuid": r["uuid"]}
    recs.append(cc.user("go on"))  # the fork's own first prompt, not answered yet
    return write_jsonl(tmp_path / "fork.jsonl", recs)


def test_a_fork_s_copied_steps_report_the_same(tmp_path: Path) -> None:
    """Copied verbatim, the copied usage still holds; folded, the window changed and only the
    tokenizer can say (the full path's work)."""
    path = _forked(tmp_path, folded=False)
    assert_same(path)
    assert _full(path)["tokens"]["total"] == 9945
    assert_same(_forked(tmp_path, folded=True), fast=False)


def test_split_responses_request_keys_exit_codes_and_a_last_attachment_report_the_same(
    tmp_path: Path,
) -> None:
    cc = CC()
    no_id = cc.assistant("x", [text("no message id")], rid="req-9", usage=(1, 1, 1, 1))
    del no_id["message"]["id"]
    no_id2 = cc.assistant("x", [{"type": "redacted_thinking", "data": "zz"}], rid="req-9",
                          usage=(1, 1, 1, 1))  # fmt: skip
    del no_id2["message"]["id"]
    recs = [
        cc.user("go"),
        cc.assistant("m1", [tool_use("c1", "Bash", command="make")], usage=(9, 9, 900, 9)),
        cc.assistant("m1", [{"type": "server_tool_use", "id": "s1", "name": "web_search",
                             "input": {"query": "q"}}], usage=(1, 1, 100, 1)),
        cc.result("c1", "Exit code 3\nmake: *** [all] Error 3"),  # failed, not flagged an error
        no_id,
        no_id2,
        cc.user("more"),
        cc.assistant("m2", [text("ok")], usage=(2, 2, 2000, 2)),
        cc.user("last"),
        cc.assistant("m3", [text("one response")], usage=(3, 3, 3000, 3)),
        cc.assistant("m3", [text("in two lines")], usage=(1, 1, 10, 1)),  # the larger one counts
    ]
    tail = {"parentUuid": cc.last, "type": "attachment", "uuid": "att-last",
            "cwd": "/elsewhere", "gitBranch": "other", "attachment": {"type": "date"}}
    path = write_jsonl(tmp_path / "s.jsonl", [*recs, tail])
    assert_same(path)
    full = _full(path)
    assert (full["session"]["cwd"], full["steps"]["total"]) == ("/elsewhere", 4)
    assert [f["exit_code"] for f in full["failed_commands"]] == [3]
    assert full["tokens"]["total"] == 3006


def test_subagent_files_good_and_broken_report_the_same(tmp_path: Path) -> None:
    main = build_session_file(tmp_path / "sess-1.jsonl")
    subs = tmp_path / "sess-1" / "subagents"
    cc = CC(session_id="sess-1")
    good = [cc.user("sub task", isSidechain=True, agentId="a1"),
            cc.assistant("sm1", [text("sub done")], usage=(1, 2, 3, 4), isSidechain=True)]  # fmt: skip
    write_jsonl(subs / "agent-a1.jsonl", good)
    write_jsonl(subs / "agent-a2.jsonl", ["{broken", "[1]"])
    assert_same(main)
    full = _full(main)
    assert (full["session"]["subagents"], full["billing"]["files"]) == (1, 3)


# Lines a harness, a crash or an attacker may leave: each is appended to a real-shaped session.
HOSTILE: list[bytes] = [
    b'{"type":"assistant","message":{"id":"h1","usage":{"input_tokens":true,"output_tokens":7}}}',
    b'{"type":"assistant","message":{"id":"h2","usage":{"input_tokens":NaN,"output_tokens":1e400}}}',
    b'{"message":{"id":"h3","usage":{"input_tokens":100000000000000000000000000000}}}',
    b'{"type":"user","message":{"content":"\xff\xfe"},"uuid":"bad-utf8"}',
    b'{"type":"assistant","requestId":"r","message":{"id":"h4","usage":{"input_tokens":5}},'
    b'"note":"\xed\xa0\x80"}',  # an encoded surrogate: the full reader refuses it, the scan not
    b'{"type":"user","uuid":"sur","parentUuid":"u18","message":{"content":"\\ud800 lone"}}',
    b"[1,2,3]",
    b'"just a string"',
    b"[" * 50_000 + b"]" * 50_000,
    b'{"type":"progress","uuid":"p-orphan","parentUuid":"nowhere","timestamp":""}',
    b'{"a":1,"a":2,"type":"system","subtype":"compact_boundary","compactMetadata":{"preTokens":true}}',
    b"   ",
    b"",
    b'{"type":"assistant","message":{"id":"h5","content":[{"type":"tool_use","id":"t9",'
    b'"name":"Write","input":["not","a","dict"]}],"usage":{"input_tokens":1}}}',
    b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9",'
    b'"content":[{"type":"image"},"Exit code 3\\noops"],"is_error":false}]}}',
    b'{"type":"summary","leafUuid":"u1","sessionId":12}',
    # Lines msgspec would read but ``json`` refuses or reads otherwise (telemetry/ccstruct.py):
    # a byte that is not UTF-8 or an integer longer than ``int`` parses, in a field msgspec
    # skips; a field of another type than declared; a duplicated key; a list item that is no
    # block; counts that are null.
    b'{"type":"user","uuid":"skip-utf8","parentUuid":"u18","message":{"content":"hi"},'
    b'"toolUseResult":"\xff\xfe"}',
    b'{"type":"user","uuid":"skip-digits","parentUuid":"u18","message":{"content":"hi"},'
    b'"toolUseResult":' + b"7" * 4301 + b"}",
    b'{"type":"assistant","uuid":"dup","type":"user","parentUuid":"u18","message":{"content":"x"}}',
    b'{"type":"assistant","uuid":"a-num","parentUuid":"u18","requestId":7,'
    b'"message":{"id":"h6","content":[1,{"type":"text","text":"a"}],"usage":{"input_tokens":3}}}',
    b'{"type":"assistant","uuid":"a-null","parentUuid":"u18","message":{"id":"h7","model":"m",'
    b'"content":[{"type":"text","text":null},{"type":"thinking"},{"type":"tool_use"}],'
    b'"usage":{"input_tokens":null,"output_tokens":2,"cache_read_input_tokens":9}}}',
    b'{"type":"user","uuid":"lp","parentUuid":null,"logicalParentUuid":"u18",'
    b'"message":{"content":"after"}}',
    b'{"type":"user","uuid":"fork-str","parentUuid":"u18","forkedFrom":"s","isSidechain":0,'
    b'"message":{"content":[{"type":"tool_result","content":[{"type":"document"},"x"]}]}}',
]


@pytest.mark.parametrize("i", range(len(HOSTILE)))
def test_a_hostile_line_reports_the_same(tmp_path: Path, i: int) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    body = path.read_bytes()
    cut = body.rindex(b"\n") + 1  # keep the partial tail last
    path.write_bytes(body[:cut] + HOSTILE[i] + b"\n" + body[cut:])
    assert_same(path)


@pytest.mark.parametrize("chunk", [7, 1000, 4096])
def test_a_number_too_long_for_int_across_read_chunks_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """The pass looks for such a number once per read chunk, and in the line a chunk ends
    with: a line that begins in one chunk and ends in the next is still left to ``json``."""
    from contextfork.telemetry import ccread

    monkeypatch.setattr(ccread, "_CHUNK", chunk)
    path = build_session_file(tmp_path / "s.jsonl")
    body = path.read_bytes()
    cut = body.index(b"\n", len(body) // 2) + 1
    line = next(h for h in HOSTILE if b'"skip-digits"' in h)
    path.write_bytes(body[:cut] + line + b"\n" + body[cut:])
    assert_same(path)


@pytest.mark.parametrize(
    "line",
    [b'{"type":["assistant"],"uuid":"x"}', b'{"type":"user","uuid":{"a":1}}',
     b'{"type":"user","parentUuid":[1]}', b'{"type":"assistant","message":{"id":["m"]}}'],
)  # fmt: skip
def test_an_unhashable_id_is_left_to_the_full_path(tmp_path: Path, line: bytes) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    before = load_session(path).malformed_lines
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n" + line + b"\n", 1))
    assert ccstatus.fast_facts(path) is None
    assert load_session(path).malformed_lines == before + 1  # the full path skips it


@pytest.mark.parametrize("change", [{"uuid": [1]}, {"uuid": {"x": 1}}, {"type": ["assistant"]},
                                    {"parentUuid": [1]}])  # fmt: skip
def test_a_live_response_s_sibling_with_an_unhashable_id_is_skipped_not_a_crash(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """A second line of a live response (same ``message.id``) joins the live conversation:
    with a list for its uuid the walk once hashed it (``status``, ``view``, ``render`` and
    ``fold`` ended in an internal error)."""
    path = build_session_file(tmp_path / "s.jsonl")
    before = load_session(path).malformed_lines
    lines = path.read_bytes().split(b"\n")
    i = next(i for i, ln in enumerate(lines) if ln.startswith(b"{") and json.loads(ln).get("type") == "assistant")
    sibling = {**json.loads(lines[i]), **change}
    path.write_bytes(b"\n".join([*lines[: i + 1], json.dumps(sibling).encode(), *lines[i + 1 :]]))
    assert load_session(path).malformed_lines == before + 1
    res = run_cli("status", "--json", "--transcript", str(path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.json()["data"]["session"]["malformed_lines"] == before + 1


def test_inline_sidechains_a_byte_order_mark_and_unrecorded_usage_go_to_the_full_path(
    tmp_path: Path,
) -> None:
    path = build_session_file(tmp_path / "s.jsonl")
    body = path.read_bytes()
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + body)
    assert_same(tmp_path / "bom.jsonl", fast=False)
    side = json.loads(body.splitlines()[0])
    side.update(isSidechain=True, uuid="side-1")
    (tmp_path / "side.jsonl").write_bytes(body.replace(b"\n", b"\n" + dumps(side).encode() + b"\n", 1))
    assert_same(tmp_path / "side.jsonl", fast=False)
    cc = CC()
    plain = write_jsonl(tmp_path / "nousage.jsonl", [cc.user("hi"), cc.assistant("m", [text("yo")])])
    plain.write_text(plain.read_text().replace('"usage"', '"usage_not"'))
    assert_same(plain, fast=False)  # counted by the tokenizer: the full path's work


def test_status_report_and_text_equal_the_full_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = cc21.write(tmp_path / "s.jsonl", grow=2)
    fast = build_status(path, None, tmp_path)
    monkeypatch.setattr("contextfork.status.fast_facts", lambda _p: None)
    full = build_status(path, None, tmp_path)
    for r in (fast, full):
        r.data.pop("generated_at")
    assert (fast.data, fast.text, fast.problems) == (full.data, full.text, full.problems)


def test_an_unterminated_last_line_is_a_step_but_not_yet_billed(tmp_path: Path) -> None:
    """The reader keeps a last line that parses; ccusage's scan waits for its newline."""
    cc = CC()
    recs = [cc.user("go"), cc.assistant("m1", [text("a")], usage=(1, 1, 100, 1)),
            cc.user("more"), cc.assistant("m2", [text("b")], usage=(2, 2, 200, 2))]  # fmt: skip
    path = write_jsonl(tmp_path / "s.jsonl", recs[:-1], tail=dumps(recs[-1]))
    assert_same(path)
    full = _full(path)
    assert (full["tokens"]["total"], full["billing"]["cache_read_input_tokens"]) == (204, 1)


def test_the_format_is_told_as_detect_tells_it(tmp_path: Path) -> None:
    """A Claude Code file whose first line is damaged is still one (``detect`` reads on); a
    Codex line that also carries uuids is Codex's (``detect`` asks Codex first)."""
    path = build_session_file(tmp_path / "s.jsonl")
    body = path.read_bytes()
    (tmp_path / "bad-first.jsonl").write_bytes(b"{oops\n" + body)
    assert_same(tmp_path / "bad-first.jsonl")
    codex = {"type": "session_meta", "payload": {"id": "x", "cwd": "/w"}, "parentUuid": None,
             "uuid": "u0", "timestamp": "2026-02-10T10:00:00.000Z"}  # fmt: skip
    (tmp_path / "codex.jsonl").write_bytes(dumps(codex).encode() + b"\n" + body)
    assert_same(tmp_path / "codex.jsonl", fast=False)
