"""``status`` and the status line tell what the proxy really sent: the API's own usage for the
folded prompt, the saving against the unfolded history, what passed through and why."""

from __future__ import annotations

import http.client
import io
import json
from collections.abc import Iterator

import pytest

from contextfork.status import build_status
from contextfork.telemetry import statusline
from tests.harness import cc_fixture
from tests.helpers import Repo
from tests.proxy.recorded import body_of
from tests.proxy.rig import Answer, Upstream, running


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.close()


def _sse(inp: int, read: int) -> Answer:
    first = ('event: message_start\ndata: {"type":"message_start","message":{"usage":'
             f'{{"input_tokens":{inp},"cache_read_input_tokens":{read},'
             '"cache_creation_input_tokens":0,"output_tokens":1}}}\n\n').encode()
    last = b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\n\n'
    return Answer(200, {"Content-Type": "text/event-stream"}, [first, last])


def _session_through_the_proxy(repo: Repo, upstream: Upstream, calls: int) -> None:
    msgs: list[dict[str, object]] = [{"role": "user", "content": "start"}]
    with running(upstream.url, repo.path) as (_, port):
        for i in range(calls):
            msgs.append({"role": "assistant", "content": [
                {"type": "text", "text": f"step {i}"},
                {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Bash",
                 "input": {"command": f"seq {i} 300"}}]})
            msgs.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i:04d}",
                 "content": "\n".join(f"row-{i}-{n}" for n in range(300))}]})
            upstream.answers.append(_sse(1000 + i, 500 * i))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/v1/messages", body_of(msgs, session=cc_fixture.SESSION),
                         {"Content-Type": "application/json", "x-api-key": "k",
                          "x-claude-code-session-id": cc_fixture.SESSION})
            conn.getresponse().read()
            conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/v1/messages", b'{"messages": 3}',
                      {"Content-Type": "application/json",
                       "x-claude-code-session-id": cc_fixture.SESSION})
        conn.getresponse().read()
        conn.close()


def test_status_shows_what_the_proxy_sent_the_saving_and_what_passed_through(
        repo: Repo, upstream: Upstream, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "800")
    _session_through_the_proxy(repo, upstream, 10)
    transcript = cc_fixture.write(repo.path / f"{cc_fixture.SESSION}.jsonl", repo.path)

    res = build_status(transcript, repo.path, repo.path)

    proxy = res.data["proxy"]
    assert proxy["requests"] == 10 and proxy["edited"] > 0
    assert proxy["as_sent"] + proxy["edited"] + proxy["passed_through"] == 10
    assert proxy["bytes_out"] < proxy["bytes_in"] and 0 < proxy["saving"] < 1
    assert proxy["last_sent_tokens"] == 1009 + 4500  # the API's own count of the last call
    assert proxy["last_unfolded_tokens"] > proxy["last_sent_tokens"]
    assert proxy["prompt_tokens"] == sum(1000 + i + 500 * i for i in range(10))
    assert "Proxy" in res.text and "folded" in res.text


def test_the_status_line_shows_the_proxys_saving(
        repo: Repo, upstream: Upstream, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "800")
    monkeypatch.setenv("XDG_CACHE_HOME", str(repo.path.parent / "cache"))
    _session_through_the_proxy(repo, upstream, 8)
    transcript = cc_fixture.write(repo.path / f"{cc_fixture.SESSION}.jsonl", repo.path)
    payload = {"transcript_path": str(transcript), "workspace": {"current_dir": str(repo.path)}}

    line = statusline.render(payload)

    assert "· proxy −" in line and "%" in line, line
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert statusline.main([]) == 0 and "proxy −" in out.getvalue()


def test_a_compressed_request_is_decoded_and_a_broken_one_refused(
        repo: Repo, upstream: Upstream) -> None:
    import gzip

    body = body_of([{"role": "user", "content": "hi"}])
    with running(upstream.url, repo.path) as (_, port):
        statuses = []
        for data in (gzip.compress(body), b"not gzip at all"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/v1/messages", data,
                         {"Content-Type": "application/json", "Content-Encoding": "gzip"})
            statuses.append(conn.getresponse().status)
            conn.close()

    assert statuses == [200, 400]
    assert [s.body for s in upstream.seen] == [body]
    assert "content-encoding" not in {k.lower() for k in upstream.seen[0].headers}
