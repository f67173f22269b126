"""The proxy's HTTP side: what it refuses, what it passes on unchanged, and how it streams."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Repo, run_cli
from tests.proxy.recorded import body_of
from tests.proxy.rig import Answer, Upstream, running

KEY = "sk-ant-api03-proxytestkeyDONOTLOG-0123456789abcdef"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.close()


def _post(port: int, path: str, body: bytes, headers: dict[str, str] | None = None,
          ) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, body, {"Content-Type": "application/json", "x-api-key": KEY,
                                      **(headers or {})})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def test_a_request_whose_host_is_not_loopback_is_refused(upstream: Upstream, repo: Repo) -> None:
    with running(upstream.url, repo.path) as (_, port):
        status, _, data = _post(port, "/v1/messages", body_of([{"role": "user", "content": "x"}]),
                                {"Host": f"rebind.attacker.example:{port}"})

    assert status == 403 and b"loopback" in data
    assert upstream.seen == []


def test_a_request_from_a_browser_page_is_refused(upstream: Upstream, repo: Repo) -> None:
    with running(upstream.url, repo.path) as (_, port):
        status, _, _ = _post(port, "/v1/messages", b"{}", {"Origin": "https://evil.example"})

    assert status == 403 and upstream.seen == []


def test_a_body_over_the_bound_is_refused_with_413(upstream: Upstream, repo: Repo,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_MAX_BODY", "1000")
    with running(upstream.url, repo.path) as (_, port):
        status, _, data = _post(port, "/v1/messages", b"{" + b" " * 5000 + b"}")

    assert status == 413 and b"request_too_large" in data
    assert upstream.seen == []


@pytest.mark.parametrize("status", [529, 400, 429])
def test_an_upstream_error_reaches_the_client_with_its_status_headers_and_body(
        status: int, upstream: Upstream, repo: Repo) -> None:
    err = json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                 "message": f"scripted {status}"}}).encode()
    upstream.answers.append(Answer(status, {"Content-Type": "application/json",
                                            "retry-after": "7", "request-id": "req_0123abc",
                                            "x-should-retry": "false"}, [err]))
    with running(upstream.url, repo.path) as (_, port):
        got, headers, data = _post(port, "/v1/messages?beta=true",
                                   body_of([{"role": "user", "content": "hi"}]))

    assert (got, data) == (status, err)
    assert headers["retry-after"] == "7" and headers["request-id"] == "req_0123abc"
    assert headers["x-should-retry"] == "false"
    assert upstream.seen[0].path == "/v1/messages?beta=true"


def test_a_stream_reaches_the_client_event_by_event_before_the_upstream_finishes(
        upstream: Upstream, repo: Repo) -> None:
    second = threading.Event()
    first = b'event: message_start\ndata: {"type":"message_start","message":{"usage":' \
            b'{"input_tokens":11,"cache_read_input_tokens":5}}}\n\n'
    last = b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":3}}\n\n'
    upstream.answers.append(Answer(200, {"Content-Type": "text/event-stream"}, [first, last],
                                   gates={1: second}))
    with running(upstream.url, repo.path) as (proxy, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/v1/messages", body_of([{"role": "user", "content": "hi"}]),
                     {"Content-Type": "application/json", "x-api-key": KEY})
        resp = conn.getresponse()
        got_first = resp.read1(len(first))  # the upstream holds the rest until we have this
        second.set()
        rest = resp.read()
        conn.close()
        totals = proxy.registry.totals()

    assert got_first == first[: len(got_first)] and got_first
    assert got_first + rest == first + last
    [conv] = totals.values()
    assert conv["usage"] == {"input_tokens": 11, "cache_read_input_tokens": 5, "output_tokens": 3}


def test_other_paths_and_methods_pass_through_untouched(upstream: Upstream, repo: Repo) -> None:
    upstream.answers.append(Answer(200, {"Content-Type": "application/json"}, [b'{"data":[]}']))
    with running(upstream.url, repo.path) as (_, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/v1/models?limit=3", headers={"x-api-key": KEY, "x-custom": "1"})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()

    assert (resp.status, data) == (200, b'{"data":[]}')
    seen = upstream.seen[0]
    assert (seen.method, seen.path) == ("GET", "/v1/models?limit=3")
    assert seen.headers.get("x-custom") == "1" and seen.headers.get("x-api-key") == KEY


def test_an_unreadable_request_goes_out_byte_for_byte_and_the_log_says_why(
        upstream: Upstream, repo: Repo) -> None:
    body = b'{"model": "m", "messages": "not an array",  "stream": false}'
    with running(upstream.url, repo.path) as (_, port):
        status, _, _ = _post(port, "/v1/messages", body)

    assert status == 200 and upstream.seen[0].body == body
    log = (repo.path / ".contextfork" / "logs" / "proxy.log").read_text()
    assert "no messages array" in log


def test_the_api_key_is_forwarded_and_never_written_anywhere(
        upstream: Upstream, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "300")
    msgs: list[dict[str, object]] = [{"role": "user", "content": "start"}]
    with running(upstream.url, repo.path, log=tmp_path / "own.log") as (_, port):
        for i in range(12):
            msgs.append({"role": "assistant", "content": [
                {"type": "text", "text": f"step {i}"},
                {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Bash",
                 "input": {"command": f"seq {i} 400"}}]})
            msgs.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i:04d}",
                 "content": "\n".join(f"out-{i}-{n}" for n in range(400))}]})
            _post(port, "/v1/messages", body_of(msgs),
                  {"authorization": f"Bearer {KEY}", "x-claude-code-session-id": "s-1"})

    assert all(s.headers.get("x-api-key") == KEY for s in upstream.seen)
    assert (repo.path / ".contextfork" / "cold").is_dir(), "nothing was folded"
    written = [p for p in [*repo.path.joinpath(".contextfork").rglob("*"), tmp_path / "own.log"]
               if p.is_file()]
    assert written
    for p in written:
        assert KEY.encode() not in p.read_bytes(), f"the key is in {p}"


def test_the_proxy_command_says_one_line_and_exits_non_zero_when_the_port_is_taken(
        repo: Repo) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = run_cli("proxy", "--port", str(port), cwd=repo.path, timeout=60)

    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0], proc.stderr
