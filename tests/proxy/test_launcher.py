"""``contextfork run``: the client behind the per-user proxy, and every way that can go wrong.

The client here is a small Python program standing in for Claude Code (the real one is in
tests/e2e/test_claude_proxy.py): it posts to ``$ANTHROPIC_BASE_URL/v1/messages`` and prints
what it got, so each test sees the URL the launcher gave it and the upstream sees the request.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from contextfork.proxy import daemon, launcher
from tests.helpers import Repo, clean_env
from tests.proxy.rig import Answer, Upstream

CLIENT = r'''
import json, os, sys, time, urllib.request
base = os.environ["ANTHROPIC_BASE_URL"]
print("BASE", base, flush=True)
def post(n):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": f"call {n}"}]}).encode()
    req = urllib.request.Request(base + "/v1/messages", body, {"content-type": "application/json",
                                                                "x-api-key": "k"})
    for attempt in range(60):  # a client retries a refused connection, as Claude Code does
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.read().decode()
        except OSError:
            time.sleep(0.25)
    return "GAVE UP"
mode = sys.argv[1]
print("REPLY", post(1), flush=True)
if mode == "kill-proxy":
    state = json.load(open(os.path.join(os.environ["CONTEXTFORK_PROXY_DIR"], "proxy.json")))
    os.kill(state["pid"], 9)
    print("REPLY", post(2), flush=True)
if mode == "sleep":
    print("SLEEPING", flush=True)
    time.sleep(60)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
'''


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.close()


@pytest.fixture
def client(tmp_path: Path) -> Path:
    path = tmp_path / "client.py"
    path.write_text(CLIENT)
    return path


def _env(tmp_path: Path, upstream: Upstream) -> dict[str, str]:
    pdir = tmp_path / "proxy-dir"
    pdir.mkdir(mode=0o700, exist_ok=True)
    return clean_env({"CONTEXTFORK_PROXY_DIR": str(pdir), "CONTEXTFORK_PROXY_GRACE": "1",
                      "ANTHROPIC_BASE_URL": upstream.url, "CONTEXTFORK_SERVER": "off"})


def _run(repo: Repo, env: dict[str, str], *args: str,
         timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "contextfork", "run", "--", *args],
                          cwd=repo.path, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _wait_gone(path: Path, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not path.exists():
            return True
        time.sleep(0.1)
    return False


def test_run_points_the_client_at_the_proxy_forwards_to_the_users_base_url_and_keeps_its_exit_code(
        tmp_path: Path, repo: Repo, upstream: Upstream, client: Path) -> None:
    upstream.answers.append(Answer(200, {"Content-Type": "application/json"}, [b'{"id":"m1"}']))
    env = _env(tmp_path, upstream)

    proc = _run(repo, env, sys.executable, str(client), "once", "7")

    assert proc.returncode == 7, proc.stderr
    base = next(ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("BASE"))
    assert base.startswith("http://127.0.0.1:") and "/c/" in base and base != upstream.url
    assert 'REPLY {"id":"m1"}' in proc.stdout
    assert [s.path for s in upstream.seen] == ["/v1/messages"]
    log = (repo.path / ".contextfork" / "logs" / "proxy.log").read_text()
    assert '"path": "/v1/messages"' in log and "/c/" not in log
    assert _wait_gone(Path(env["CONTEXTFORK_PROXY_DIR"]) / "proxy.json"), \
        "the proxy did not stop after its last client"


def test_two_clients_share_one_proxy(tmp_path: Path, repo: Repo, upstream: Upstream,
                                     client: Path) -> None:
    env = _env(tmp_path, upstream)
    args = [sys.executable, "-m", "contextfork", "run", "--", sys.executable, str(client), "sleep"]
    with subprocess.Popen(args, cwd=repo.path, env=env, stdout=subprocess.PIPE,
                          text=True) as first:
        try:
            assert first.stdout is not None
            lines = [first.stdout.readline() for _ in range(3)]
            port_a = lines[0].split()[1].split("/c/")[0]
            second = _run(repo, env, sys.executable, str(client), "once")
            port_b = next(ln.split()[1] for ln in second.stdout.splitlines()
                          if ln.startswith("BASE")).split("/c/")[0]
        finally:
            first.terminate()
    assert port_a == port_b and second.returncode == 0


def test_a_signal_to_the_launcher_reaches_the_client_and_comes_back_as_its_status(
        tmp_path: Path, repo: Repo, upstream: Upstream, client: Path) -> None:
    env = _env(tmp_path, upstream)
    with subprocess.Popen(
            [sys.executable, "-m", "contextfork", "run", "--", sys.executable, str(client),
             "sleep"], cwd=repo.path, env=env, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        while "SLEEPING" not in proc.stdout.readline():
            pass

        proc.send_signal(signal.SIGTERM)

        assert proc.wait(30) == -signal.SIGTERM


def test_when_the_proxy_cannot_start_the_client_runs_directly_with_one_warning(
        tmp_path: Path, repo: Repo, upstream: Upstream, client: Path) -> None:
    env = _env(tmp_path, upstream)
    unsafe = tmp_path / "open-dir"
    unsafe.mkdir()
    unsafe.chmod(0o777)  # another user could answer in the proxy's place: refused
    env["CONTEXTFORK_PROXY_DIR"] = str(unsafe)

    proc = _run(repo, env, sys.executable, str(client), "once", "3")

    assert proc.returncode == 3
    assert f"BASE {upstream.url}" in proc.stdout, "the client did not get its own base URL"
    warning = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(warning) == 1 and "running" in warning[0] and "directly" in warning[0]


def test_a_proxy_killed_mid_session_is_started_again_on_the_same_port(
        tmp_path: Path, repo: Repo, upstream: Upstream, client: Path) -> None:
    upstream.answers += [Answer(200, {"Content-Type": "application/json"}, [b'{"n":1}']),
                         Answer(200, {"Content-Type": "application/json"}, [b'{"n":2}'])]
    env = _env(tmp_path, upstream)

    proc = _run(repo, env, sys.executable, str(client), "kill-proxy")

    assert proc.returncode == 0, proc.stderr
    assert 'REPLY {"n":1}' in proc.stdout and 'REPLY {"n":2}' in proc.stdout, proc.stdout
    starts = [json.loads(ln) for ln in
              (Path(env["CONTEXTFORK_PROXY_DIR"]) / "proxy.log").read_text().splitlines()
              if '"start"' in ln]
    assert len(starts) == 2 and starts[0]["port"] == starts[1]["port"]


def test_run_without_a_command_is_a_usage_error(tmp_path: Path, repo: Repo,
                                                upstream: Upstream) -> None:
    proc = subprocess.run([sys.executable, "-m", "contextfork", "run"], cwd=repo.path,
                          env=_env(tmp_path, upstream), capture_output=True, text=True,
                          timeout=60, check=False)

    assert proc.returncode == 2 and "contextfork run -- claude" in proc.stderr
    assert os.environ.get("ANTHROPIC_BASE_URL") != upstream.url


class _SlowHealth(http.server.BaseHTTPRequestHandler):
    """A live proxy that takes 1.5 s to answer its first health check (a loaded machine)."""

    delays: ClassVar[list[float]] = [1.5]

    def do_GET(self) -> None:
        if self.delays:
            time.sleep(self.delays.pop())
        body = json.dumps({"ok": True, "pid": os.getpid()}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_a_live_proxy_slow_to_answer_is_waited_for_not_doubled(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowHealth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        daemon.write_json(tmp_path / daemon.STATE, {"pid": os.getpid(), "port": port})
        assert launcher.start_proxy(tmp_path) == port
    finally:
        server.shutdown()
        server.server_close()
    assert not (tmp_path / "proxy.err").exists(), "a second proxy was started"


def test_a_wedged_proxy_is_stopped_and_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 upstream: Upstream) -> None:
    pdir = tmp_path / "proxy-dir"
    pdir.mkdir(mode=0o700)
    for name, value in _env(tmp_path, upstream).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CONTEXTFORK_PROXY_START_TIMEOUT", "30")  # the new one may start slowly
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        silent = s.getsockname()[1]  # nothing answers there
    waited: list[float] = []

    def answers(port: int, pid: int, deadline: float) -> bool:
        waited.append(deadline)
        return launcher.healthy(port)  # the whole wait, cut short

    monkeypatch.setattr(launcher, "_answers", answers)
    with subprocess.Popen(["sleep", "60"]) as wedged:
        daemon.write_json(pdir / daemon.STATE, {"pid": wedged.pid, "port": silent})
        port = launcher.start_proxy(pdir)
        assert wedged.wait(timeout=10) == -signal.SIGTERM, "the wedged proxy was not stopped"
    state = daemon.read_state(pdir)
    assert state is not None
    try:
        assert waited and port != silent and launcher.healthy(port, int(state["pid"]))
    finally:
        os.kill(int(state["pid"]), signal.SIGTERM)
