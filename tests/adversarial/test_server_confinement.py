"""Issue 22, items 1 and 5: a served command can do nothing its caller could not do cold.

The command server takes argv, cwd, environment and umask from its caller; everything else a
process has (namespaces, limits, privileges, niceness, interpreter) is the server's. Each test
here confines a caller for real (``unshare -n``, ``RLIMIT_FSIZE``, ``nice``, ``setpriv
--no-new-privs``, another ``PYTHONPATH``…) and checks that the served command is exactly as
confined as the cold one; the rest attack the server's robustness (closed stdio, a stopped
server, silent clients, what the first command's environment leaves behind).
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextfork.server import client
from tests.helpers import Repo, clean_env
from tests.server import conftest as server_fixtures
from tests.server.conftest import Served

pytestmark = pytest.mark.skipif(not client._supported(), reason="needs fork(), /proc and SCM_RIGHTS")

CONTEXTFORK = [sys.executable, "-m", "contextfork"]
served = server_fixtures.served  # the served fixture of tests/server, shared


def _run(args: list[str], cwd: Path, env: dict[str, str], preexec: Callable[[], None] | None = None,
         stdin: Any = subprocess.DEVNULL, timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(args, cwd=cwd, env=env, preexec_fn=preexec, stdin=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def _works(*cmd: str) -> bool:
    try:
        return subprocess.run([*cmd, "true"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _unshare_net() -> list[str]:
    """A new network namespace (root: ``unshare -n``; a user: with a user namespace too)."""
    for cmd in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which("unshare") and _works(*cmd):
            return [*cmd, "--"]
    pytest.skip("cannot create a network namespace here")


def _git_runs(program: str) -> dict[str, str]:
    """Environment through which git runs ``program`` (a shell line) at its next `git status`:
    what a confined agent passes to run a program where the command runs."""
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_CONFIG_VALUE_0": f"{program}; true"}  # fmt: skip


# --------------------------------------------------------------------- confinements (item 1)


def _git_daemon(root: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
                             f"--base-path={root}", "--listen=127.0.0.1", f"--port={port}", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.1)
        yield f"git://127.0.0.1:{port}/remote.git"
    finally:
        # `git daemon` runs `git-daemon` as its child: kill the group, or the child outlives us
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_a_push_run_in_a_namespace_without_network_does_not_reach_the_remote(
    repo: Repo, served: Served, tmp_path: Path
) -> None:
    unshare = _unshare_net()
    if not shutil.which("git"):
        pytest.skip("no git")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "remote.git")], check=True)
    daemon = _git_daemon(tmp_path)
    url = next(daemon)
    try:
        repo.git("remote", "add", "origin", url)
        repo.write("notes/x.txt", "x\n")
        assert served.cold("export", "--goal", "g", cwd=repo.path).returncode == 0
        served.start()
        boxed = _run([*unshare, *CONTEXTFORK, "push", "origin"], repo.path, served.env)
        refs = subprocess.run(["git", "-C", str(tmp_path / "remote.git"), "for-each-ref"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert boxed.returncode != 0 and "refs/contextfork/" not in refs, (boxed.stdout, refs)
        # The remote is reachable from outside the namespace: the refusal above was the box's.
        free = served.run("push", "origin", cwd=repo.path)
        assert free.returncode == 0, free.stderr
    finally:
        daemon.close()


def test_git_config_in_the_callers_environment_runs_programs_inside_its_namespace(
    repo: Repo, served: Served, tmp_path: Path
) -> None:
    unshare = _unshare_net()
    served.start()
    seen, mine = tmp_path / "seen", tmp_path / "mine"
    script = f'readlink /proc/self/ns/net > {mine} && exec "$@"'
    env = {**served.env, **_git_runs(f"readlink /proc/self/ns/net > {seen}")}
    proc = _run([*unshare, "sh", "-c", script, "sh", *CONTEXTFORK, "status"], repo.path, env)
    assert proc.returncode == 0, proc.stderr
    assert seen.read_text() == mine.read_text()  # not the server's network namespace


def _fsize_8k() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (8 * 1024, 8 * 1024))


def test_an_export_under_a_file_size_limit_fails_served_as_it_fails_cold(
    repo: Repo, served: Served
) -> None:
    repo.write("big.txt", "x" * 40_000 + "\n")
    cold = _run([*CONTEXTFORK, "export", "--goal", "g"], repo.path,
                {**served.env, "CONTEXTFORK_SERVER": "off"}, _fsize_8k)  # fmt: skip
    assert cold.returncode != 0 and "File too large" in cold.stderr
    served.start()
    for _ in range(2):  # the first may start a server of its own: the second would be served
        warm = _run([*CONTEXTFORK, "export", "--goal", "g"], repo.path, served.env, _fsize_8k)
        assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr)
    assert not list((repo.path / ".contextfork" / "packages").glob("*/untracked/big.txt"))


def test_a_served_command_runs_at_its_callers_niceness(repo: Repo, served: Served, tmp_path: Path) -> None:
    served.start()
    seen = tmp_path / "nice"
    env = {**served.env, **_git_runs(f"nice > {seen}")}
    for _ in range(2):
        proc = _run([*CONTEXTFORK, "status"], repo.path, env, lambda: os.nice(7) and None)
        assert proc.returncode == 0, proc.stderr
        assert seen.read_text().strip() == str(os.nice(0) + 7)


def test_a_caller_with_no_new_privs_keeps_them_served(repo: Repo, served: Served, tmp_path: Path) -> None:
    if not shutil.which("setpriv") or not _works("setpriv", "--no-new-privs"):
        pytest.skip("no setpriv --no-new-privs here")
    served.start()
    seen = tmp_path / "nnp"
    env = {**served.env, **_git_runs(f"grep NoNewPrivs /proc/self/status > {seen}")}
    for _ in range(2):
        proc = _run(["setpriv", "--no-new-privs", *CONTEXTFORK, "status"], repo.path, env)
        assert proc.returncode == 0, proc.stderr
        assert seen.read_text().split() == ["NoNewPrivs:", "1"]


def test_a_client_naming_the_servers_key_from_another_context_is_refused(
    repo: Repo, served: Served, tmp_path: Path
) -> None:
    """The key in a request is the client's word; the server reads the client's limits itself
    (from the kernel's pid for the connection) and refuses what is not its own."""
    served.start()
    data = served.status()
    marker = tmp_path / "ran"
    request = {"argv": ["fold", "add", "1", "s", "--session", "lie"], "cwd": str(repo.path),
               "env": {**served.env, "CONTEXTFORK_SERVER": "off"}, "umask": 0o022,
               "key": data["key"], "argv0": "contextfork"}  # fmt: skip
    lie = (
        "import marshal, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])\n"
        "body = marshal.loads(bytes.fromhex(sys.argv[2]))\n"
        "frame = marshal.dumps(body); frame = len(frame).to_bytes(4, 'big') + frame\n"
        "socket.send_fds(s, [frame], [0, 1, 2])\n"
        "n = int.from_bytes(s.recv(4), 'big'); reply = marshal.loads(s.recv(n))\n"
        "if 'pid' in reply: s.sendall(bytes.fromhex(sys.argv[3])); s.recv(64)\n"
        "print(sorted(reply))\n"
    )
    go = marshal.dumps({"go": True})
    proc = _run([sys.executable, "-c", lie, data["socket"], marshal.dumps(request).hex(),
                 (len(go).to_bytes(4, "big") + go).hex()], repo.path, served.env, _fsize_8k,
                stdin=subprocess.PIPE, timeout=60)  # fmt: skip
    assert proc.stdout.strip() == "['refused']", (proc.stdout, proc.stderr)
    assert not (repo.path / ".contextfork" / "cold" / "lie").exists()
    assert not marker.exists()


def test_another_pythonpath_never_gets_the_modules_a_server_imported_for_it(
    repo: Repo, served: Served, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "filelock.py").write_text("raise ImportError('the shadowed filelock')\n")
    base = os.environ.get("PYTHONPATH")
    shadowed = {"PYTHONPATH": os.pathsep.join([str(shadow), *([base] if base else [])])}
    started = served.run("server", "start", env=shadowed)
    assert started.returncode == 0, started.stderr
    for _ in range(2):
        proc = served.run("fold", "add", "1", "step", "--session", "s1", cwd=repo.path, input="payload\n")
        assert proc.returncode == 0, proc.stderr


def test_the_first_commands_typer_use_rich_does_not_reach_later_commands(
    repo: Repo, served: Served
) -> None:
    cold = served.cold("export", "--help", cwd=repo.path, env={"COLUMNS": "100"})
    plain = served.cold("export", "--help", cwd=repo.path, env={"COLUMNS": "100", "TYPER_USE_RICH": "0"})
    assert cold.stdout != plain.stdout  # the variable matters here
    started = served.run("server", "start", env={"TYPER_USE_RICH": "0"})
    assert started.returncode == 0, started.stderr
    for _ in range(2):
        warm = served.run("export", "--help", cwd=repo.path, env={"COLUMNS": "100"})
        assert warm.stdout == cold.stdout


def test_a_dependency_installed_beside_us_gets_a_new_server(served: Served, tmp_path: Path) -> None:
    """An editable install imports its dependencies from site-packages, not from beside its
    source: installing or upgrading one there must change the key too."""
    deps = tmp_path / "deps"
    deps.mkdir()
    base = os.environ.get("PYTHONPATH")
    env = {"PYTHONPATH": os.pathsep.join([*([base] if base else []), str(deps)])}
    before = json.loads(served.run("server", "status", "--json", env=env).stdout)["data"]["key"]
    time.sleep(0.01)
    (deps / "somedep-2.0.dist-info").mkdir()  # what `pip install -U somedep` leaves
    after = json.loads(served.run("server", "status", "--json", env=env).stdout)["data"]["key"]
    assert before != after


def test_the_server_is_off_unless_enabled_and_enable_disable_persist(repo: Repo, tmp_path: Path) -> None:
    directory = Path(tempfile.mkdtemp(prefix="cfs-", dir="/tmp"))
    env = {k: v for k, v in clean_env().items() if k != "CONTEXTFORK_SERVER"}
    env.update({"CONTEXTFORK_SERVER_DIR": str(directory), "XDG_CONFIG_HOME": str(tmp_path / "cfg")})

    def sockets() -> list[str]:
        return [n for n in os.listdir(directory) if n.startswith("s-") and "." not in n]

    try:
        for _ in range(2):
            assert _run([*CONTEXTFORK, "status"], repo.path, env).returncode == 0
        time.sleep(1)
        assert sockets() == []  # nothing served, nothing started
        enable = _run([*CONTEXTFORK, "server", "enable"], repo.path, env)
        assert enable.returncode == 0, enable.stderr
        assert (tmp_path / "cfg" / "contextfork" / "server").read_text().strip() == "on"
        assert _run([*CONTEXTFORK, "server", "start"], repo.path, env).returncode == 0
        assert _run([*CONTEXTFORK, "status"], repo.path, env).returncode == 0
        status = json.loads(_run([*CONTEXTFORK, "server", "status", "--json"], repo.path, env).stdout)
        assert status["data"]["running"]["served"] == 1
        off = _run([*CONTEXTFORK, "server", "disable"], repo.path, env)
        assert off.returncode == 0 and "stopped 1" in off.stdout, off.stdout
        assert _run([*CONTEXTFORK, "status"], repo.path, env).returncode == 0
        time.sleep(1)
        assert sockets() == []
        # the environment wins over the setting
        assert _run([*CONTEXTFORK, "server", "start"], repo.path, {**env, "CONTEXTFORK_SERVER": "on"}).returncode == 0
        assert sockets() != []
    finally:
        _run([*CONTEXTFORK, "server", "stop", "--all"], repo.path, {**env, "CONTEXTFORK_SERVER": "on"})
        shutil.rmtree(directory, ignore_errors=True)


# ------------------------------------------------------------------------ robustness (item 5)


def _shell(served: Served, cwd: Path, line: str, env: dict[str, str] | None = None,
           timeout: float = 30) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(["sh", "-c", line, "sh", *CONTEXTFORK], cwd=cwd, env={**served.env, **(env or {})},
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def test_a_served_command_with_stdin_closed_is_the_cold_one(repo: Repo, served: Served) -> None:
    served.start()
    line = '"$@" fold add 1 step --session s1 0<&-'
    cold = _shell(served, repo.path, line, {"CONTEXTFORK_SERVER": "off"})
    before = served.served()
    warm = _shell(served, repo.path, line)  # before: it read its own socket and hung
    assert served.served() == before + 1
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.returncode == 2 and "no payload" in warm.stderr  # one line, no internal error


def test_a_served_command_with_stdout_closed_prints_no_traceback(repo: Repo, served: Served) -> None:
    served.start()
    cold = _shell(served, repo.path, '"$@" status >&-', {"CONTEXTFORK_SERVER": "off"})
    before = served.served()
    warm = _shell(served, repo.path, '"$@" status >&-')
    assert served.served() == before + 1
    assert "Traceback" not in warm.stderr and "error" not in warm.stderr, warm.stderr
    assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr) == (0, "")


def test_a_served_command_with_stderr_closed_exits_as_cold(repo: Repo, served: Served) -> None:
    served.start()
    cold = _shell(served, repo.path, '"$@" status 2>&-', {"CONTEXTFORK_SERVER": "off"})
    before = served.served()
    warm = _shell(served, repo.path, '"$@" status 2>&-')
    assert served.served() == before + 1
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout)
    assert warm.returncode == 0


def test_a_stopped_server_costs_a_bounded_wait_and_says_so(repo: Repo, served: Served) -> None:
    info = served.start()
    started = time.monotonic()
    cold = served.cold("status", cwd=repo.path)
    cold_took = time.monotonic() - started
    os.kill(int(info["pid"]), signal.SIGSTOP)
    try:
        started = time.monotonic()
        proc = served.run("status", cwd=repo.path, timeout=30)
        took = time.monotonic() - started
        assert (proc.returncode, proc.stdout) == (cold.returncode, cold.stdout)
        # a cold run and the client's look at the server (0.1 s), loaded machine or not
        assert took < cold_took + 3, f"a stopped server held the command {took:.1f} s"
        status = served.run("server", "status", timeout=30)
        assert f"pid {info['pid']} is stopped" in status.stdout, status.stdout
        assert served.run("server", "stop", timeout=30).returncode == 0
        assert served.wait_until(lambda: not os.path.exists(f"/proc/{info['pid']}/cmdline"))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(info["pid"]), signal.SIGCONT)


def test_a_command_whose_server_stopped_still_ends_its_client_as_it_ended(
    repo: Repo, served: Served
) -> None:
    """The server reports a command killed by a signal after waitpid; stopped, it reports
    nothing, and the client finds out how its command ended by itself."""
    info = served.start()
    server = int(info["pid"])
    proc = subprocess.Popen([*CONTEXTFORK, "fold", "add", "1", "waits", "--session", "blk"],
                            cwd=repo.path, env=served.env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert served.wait_until(lambda: served.status()["running"]["running"] == 1), "not served"
        (child,) = map(int, Path(f"/proc/{server}/task/{server}/children").read_text().split())
        os.kill(server, signal.SIGSTOP)
        os.kill(child, signal.SIGKILL)
        proc.communicate(timeout=20)
        assert proc.returncode == -signal.SIGKILL
    finally:
        os.kill(server, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def test_silent_and_slow_clients_do_not_delay_a_command(repo: Repo, served: Served) -> None:
    info = served.start()
    started = time.monotonic()
    assert served.run("status", cwd=repo.path).returncode == 0  # warm the caches first
    alone = time.monotonic() - started
    before = served.served()
    quiet: list[socket.socket] = []
    try:
        for i in range(20):
            s = socket.socket(socket.AF_UNIX)
            s.connect(info["socket"])
            if i % 5 == 4:
                s.sendall(b"\x00\x00")  # half a length header, then nothing
            quiet.append(s)
        started = time.monotonic()
        proc = served.run("status", cwd=repo.path, timeout=60)
        took = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr
        assert took < alone + 4, f"20 silent clients held a command {took:.1f} s (alone: {alone:.1f} s)"
        assert served.served() == before + 1  # served, not run cold after a time-out
    finally:
        for s in quiet:
            s.close()


def test_a_socket_directory_with_a_long_path_still_gets_a_server(repo: Repo, tmp_path: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="cfs-", dir="/tmp"))
    directory = root / ("d" * 70)
    directory.mkdir(mode=0o700)
    s = Served(directory)
    try:
        assert len(str(directory)) + 40 > 107  # sockaddr_un's sun_path: 108 bytes with its NUL
        s.start()
        assert s.run("status", cwd=repo.path).returncode == 0
        assert s.served() == 1
        doctor = json.loads(s.run("doctor", "--json", cwd=repo.path).stdout)["data"]["checks"]
        check = next(c for c in doctor if c["name"] == "server")
        assert check["status"] == "ok" and " command(s) served" in check["detail"], check
    finally:
        s.run("server", "stop", "--all")
        shutil.rmtree(root, ignore_errors=True)


def test_doctor_reports_a_server_that_cannot_start_and_why(repo: Repo, served: Served) -> None:
    path = Path(served.status()["socket"])
    path.mkdir()  # something that is not ours to replace holds the socket's name
    (path / "keep").write_text("x")
    start = served.run("server", "start", timeout=60)
    assert start.returncode != 0
    doctor = json.loads(served.run("doctor", "--json", cwd=repo.path).stdout)["data"]["checks"]
    check = next(c for c in doctor if c["name"] == "server")
    assert check["status"] == "warning" and "cannot start" in check["detail"], check
