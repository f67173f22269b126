"""``view --serve`` against DNS rebinding and other sites (issue 22 #5/#7).

A page on ``evil.example`` whose name the attacker re-points at 127.0.0.1 makes the browser
send the attacker's name in ``Host``; a page of another site that fetches the inspector sends
its own ``Origin`` and ``Sec-Fetch-Site: cross-site``. Both must get 403, whatever the method.
Real HTTP requests (``http.client``, headers set by hand) to a real ``view --serve`` process.
"""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import cc_fixture
from tests.helpers import clean_env, make_repo


@dataclass
class Served:
    port: int
    proc: subprocess.Popen[bytes]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("viewhost")
    repo = make_repo(root / "repo")
    transcript = cc_fixture.write(root / "session.jsonl", repo.path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextfork", "view", "--transcript", str(transcript),
         "--out", str(root / "site"), "--serve", "--port", "0"],
        cwd=repo.path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()  # "Serving … at http://127.0.0.1:PORT/ …"
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if m is None:
        proc.kill()
        pytest.fail(f"view --serve did not start: {line!r} {proc.stderr.read()!r}")  # type: ignore[union-attr]
    yield Served(int(m.group(1)), proc)
    proc.terminate()
    proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


def request(port: int, headers: list[tuple[str, str]], method: str = "GET",
            path: str = "/index.html") -> tuple[int, bytes]:
    """One request with exactly ``headers`` (no Host of http.client's own)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def raw_request(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def own(port: int) -> list[tuple[str, str]]:
    return [("Host", f"127.0.0.1:{port}")]


REFUSED_HOSTS = [
    "evil.example",
    "evil.example:{port}",
    "127.0.0.1.evil.example:{port}",
    "localhost.evil.example:{port}",
    "localhost:{other}",  # the right name on another port is another origin
    "127.0.0.1",  # port 80 implied: not the served port
    "10.0.0.1:{port}",
    "0.0.0.0:{port}",
    "[::ffff:7f00:1]:{port}",
    "127.0.0.1:{port}@evil.example",
    "",
]


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_serve_refuses_a_host_header_that_is_not_a_loopback_name_of_this_server(
    served: Served, host: str
) -> None:
    value = host.format(port=served.port, other=served.port + 1)
    status, body = request(served.port, [("Host", value)])
    assert status == 403, (value, status)
    assert b"billing" not in body and b"step-" not in body


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "127.0.0.2:{port}",
                                  "[::1]:{port}", "LOCALHOST:{port}"])
def test_serve_answers_its_loopback_names_on_its_port(served: Served, host: str) -> None:
    status, body = request(served.port, [("Host", host.format(port=served.port))])
    assert status == 200 and b'id="step-' in body


@pytest.mark.parametrize("method", ["HEAD", "POST", "PUT", "OPTIONS"])
def test_serve_refuses_a_foreign_host_whatever_the_method(served: Served, method: str) -> None:
    status, _ = request(served.port, [("Host", "evil.example")], method=method)
    assert status == 403


def test_serve_refuses_a_request_without_host_or_with_two(served: Served) -> None:
    status, _ = request(served.port, [])
    assert status == 403
    status, _ = request(served.port, [("Host", f"127.0.0.1:{served.port}"),
                                      ("Host", "evil.example")])  # fmt: skip
    assert status == 403
    http10 = raw_request(served.port, b"GET /index.html HTTP/1.0\r\n\r\n")
    assert http10.startswith(b"HTTP/1.0 403"), http10[:60]


@pytest.mark.parametrize("origin", ["http://evil.example", "http://evil.example:{port}",
                                    "null", "http://127.0.0.1:{other}", "https://127.0.0.1:{port}"])
def test_serve_refuses_another_origin(served: Served, origin: str) -> None:
    value = origin.format(port=served.port, other=served.port + 1)
    status, body = request(served.port, [*own(served.port), ("Origin", value)])
    assert status == 403, value
    assert b'id="step-' not in body


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_serve_refuses_a_cross_site_fetch(served: Served, site: str) -> None:
    status, _ = request(served.port, [*own(served.port), ("Sec-Fetch-Site", site)])
    assert status == 403


@pytest.mark.parametrize("headers", [
    [("Origin", "http://127.0.0.1:{port}")],
    [("Origin", "http://localhost:{port}")],
    [("Sec-Fetch-Site", "same-origin")],
    [("Sec-Fetch-Site", "none")],  # typed in the address bar, or `view --open`
])  # fmt: skip
def test_serve_answers_its_own_origin(served: Served, headers: list[tuple[str, str]]) -> None:
    extra = [(k, v.format(port=served.port)) for k, v in headers]
    status, body = request(served.port, [*own(served.port), *extra])
    assert status == 200 and b'id="step-' in body


def test_every_refusal_is_logged_in_one_line_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    transcript = cc_fixture.write(tmp_path / "session.jsonl", repo.path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextfork", "view", "--transcript", str(transcript),
         "--out", str(tmp_path / "site"), "--serve", "--port", "0"],
        cwd=repo.path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        m = re.search(r":(\d+)/", proc.stdout.readline().decode())
        assert m is not None
        port = int(m.group(1))
        assert request(port, [("Host", "evil.example:80")])[0] == 403
        assert request(port, [*own(port), ("Origin", "http://evil.example")])[0] == 403
        assert request(port, [*own(port)])[0] == 200
        time.sleep(0.2)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    lines = err.decode().splitlines()
    refused = [line for line in lines if "refused" in line]
    assert len(refused) == 2, lines
    assert "evil.example:80" in refused[0] and "Host" in refused[0]
    assert "http://evil.example" in refused[1] and "Origin" in refused[1]
    assert "Traceback" not in err.decode()


def test_allow_remote_accepts_the_bound_address_but_never_a_dns_name() -> None:
    from contextfork.view.serve import Gate

    def hdrs(*pairs: tuple[str, str]) -> http.client.HTTPMessage:
        msg = http.client.HTTPMessage()
        for k, v in pairs:
            msg[k] = v
        return msg

    every = Gate("0.0.0.0", 8765)
    assert every.refusal(hdrs(("Host", "192.168.1.5:8765"))) is None
    assert every.refusal(hdrs(("Host", "[fe80::1]:8765"))) is None
    assert every.refusal(hdrs(("Host", "evil.example:8765"))) is not None
    assert every.refusal(hdrs(("Host", "192.168.1.5:8765"),
                              ("Origin", "http://evil.example:8765"))) is not None  # fmt: skip
    one = Gate("192.168.1.5", 8765)
    assert one.refusal(hdrs(("Host", "192.168.1.5:8765"))) is None
    assert one.refusal(hdrs(("Host", "192.168.1.6:8765"))) is not None
    assert one.refusal(hdrs(("Host", "[::1]:8765"))) is None
    assert one.refusal(hdrs(("Host", "[localhost]:8765"))) is not None


def test_serve_binds_the_ipv6_loopback_and_checks_host_there(tmp_path: Path) -> None:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    repo = make_repo(tmp_path / "repo")
    transcript = cc_fixture.write(tmp_path / "session.jsonl", repo.path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextfork", "view", "--transcript", str(transcript),
         "--out", str(tmp_path / "site"), "--serve", "--host", "::1", "--port", "0"],
        cwd=repo.path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        m = re.search(r"http://\[::1\]:(\d+)/", line)
        assert m is not None, (line, proc.stderr.read() if proc.stderr else b"")
        port = int(m.group(1))
        for host, want in ((f"[::1]:{port}", 200), ("evil.example", 403)):
            conn = http.client.HTTPConnection("::1", port, timeout=30)
            conn.putrequest("GET", "/index.html", skip_host=True)
            conn.putheader("Host", host)
            conn.endheaders()
            assert conn.getresponse().status == want, host
            conn.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
