"""The command server (issue 15, speed): a served command is the same command run cold, with the
client's argv, cwd, environment, umask, stdin/stdout/stderr, exit status and signals; a server
of other code, a foreign socket directory or a dead server never change what runs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from contextfork.server import client
from tests.helpers import Repo, clean_env
from tests.server.conftest import Served

pytestmark = pytest.mark.skipif(not client._supported(), reason="needs fork() and SCM_RIGHTS")


def _package_files(pkg: Path) -> dict[str, bytes]:
    return {p.relative_to(pkg).as_posix(): p.read_bytes() for p in sorted(pkg.rglob("*")) if p.is_file()}


def _newest_package(repo: Repo) -> Path:
    return sorted((repo.path / ".contextfork" / "packages").iterdir())[-1]


def test_a_served_export_writes_what_a_cold_export_writes(repo: Repo, served: Served) -> None:
    served.start()
    repo.write("src/app.py", "def main():\n    return 2\n")
    repo.write("notes/todo.txt", "untracked\n")
    cold = served.cold("export", "--goal", "ship it", cwd=repo.path)
    assert cold.returncode == 0, cold.stderr
    cold_files = _package_files(_newest_package(repo))
    before = served.served()
    warm = served.run("export", "--goal", "ship it", cwd=repo.path)
    assert warm.returncode == 0, warm.stderr
    assert served.served() == before + 1  # it really went through the server
    warm_files = _package_files(_newest_package(repo))
    assert warm_files.keys() == cold_files.keys()
    same = ("git_diff.patch", "git_index.patch", "git_status.json", "untracked/notes/todo.txt")
    for name in same:
        assert warm_files[name] == cold_files[name], name
    for name in ("handoff.json", "untracked_manifest.json"):
        assert json.loads(warm_files[name]) == json.loads(cold_files[name])
    assert served.run("validate", cwd=repo.path).returncode == 0


@pytest.mark.parametrize(
    "args",
    [("validate", "no-such-package"), ("export", "--go", "x"), ("fold", "show", "7", "--session", "none"),
     ("nonsense-command",), ("status", "--json")],
    ids=["not-found", "usage", "fold-missing", "unknown-command", "json"],
)  # fmt: skip
def test_exit_status_stdout_and_stderr_are_the_cold_commands(
    repo: Repo, served: Served, args: tuple[str, ...]
) -> None:
    served.start()
    cold = served.cold(*args, cwd=repo.path)
    before = served.served()
    warm = served.run(*args, cwd=repo.path)
    assert served.served() == before + 1
    assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr)
    if args[-1] != "--json":
        assert warm.stdout == cold.stdout
    else:  # timings and ages move between two runs: the structure is what must match
        assert json.loads(warm.stdout).keys() == json.loads(cold.stdout).keys()


def test_the_caller_has_the_status_and_all_output_before_the_served_child_is_gone(
    repo: Repo, served: Served
) -> None:
    """A served command that returns reports its own exit and hands the descriptors back: its
    caller does not wait for the child's teardown (here held for 5 s after the report)."""
    served.start()
    cold = served.cold("status", cwd=repo.path)
    started = time.monotonic()
    proc = served.run("status", cwd=repo.path, env={"CONTEXTFORK_TEST_PAUSE_AT": "served:reported"})
    took = time.monotonic() - started
    assert (proc.returncode, proc.stdout, proc.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert took < 3, f"the caller waited for the child's teardown ({took:.1f} s)"
    assert served.status()["running"]["running"] == 1  # the child is still there, paused
    assert served.wait_until(lambda: served.status()["running"]["running"] == 0)


def test_stdin_cwd_and_environment_are_the_clients(repo: Repo, served: Served) -> None:
    served.start()
    payload = "exact bytes from stdin ✓\n" * 50
    sub = repo.path / "src"
    add = served.run("fold", "add", "3", "from stdin", "--session", "s1", cwd=sub, input=payload)
    assert add.returncode == 0, add.stderr
    show = served.run("fold", "show", "3", "--session", "s1", "--json", cwd=sub)
    assert show.returncode == 0, show.stderr
    node = json.loads(show.stdout)["data"]["node"]
    assert node["payload_sha256"] == hashlib.sha256(payload.encode("utf-8")).hexdigest()
    # the repo was found from the client's cwd, so the store is under the repo, not the server's cwd
    assert (repo.path / ".contextfork" / "cold" / "s1").is_dir()
    # an environment variable the command reads: the client's value, not the server's
    cfg = repo.path.parent / "claude-cfg"
    status = served.run("status", "--json", cwd=repo.path, env={"CLAUDE_CONFIG_DIR": str(cfg)})
    assert status.returncode == 0, status.stderr


def test_a_request_larger_than_the_first_read_is_read_whole(repo: Repo, served: Served) -> None:
    from contextfork.server import child

    served.start()
    before = served.served()
    # The environment travels in the request (one variable may hold at most 128 KiB).
    big = {f"CONTEXTFORK_BIG_{i}": "x" * (child.FIRST_READ // 2) for i in range(6)}
    # Paused after it reported: still counted as running only if the server really ran it
    # (a refused request would have run cold in the client instead).
    pause = {"CONTEXTFORK_TEST_PAUSE_AT": "served:reported", "CONTEXTFORK_TEST_PAUSE_S": "3"}
    proc = served.run("status", cwd=repo.path, env={**big, **pause})
    assert proc.returncode == 0, proc.stderr
    assert served.served() == before + 1
    assert served.status()["running"]["running"] == 1


def test_the_clients_umask_shapes_the_files_a_served_command_writes(repo: Repo, served: Served) -> None:
    served.start()
    repo.write("notes/x.txt", "x\n")
    proc = subprocess.run(
        ["sh", "-c", f'umask 077 && exec "{sys.executable}" -m contextfork export --goal g'],
        cwd=repo.path, env=served.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert served.served() >= 1
    mode = (_newest_package(repo) / "handoff.json").stat().st_mode & 0o777
    assert mode == 0o600


def test_a_served_command_killed_by_a_signal_ends_its_client_the_same_way(
    repo: Repo, served: Served
) -> None:
    served.start()
    repo.write("notes/x.txt", "x\n")
    proc = served.run("export", "--goal", "x", cwd=repo.path,
                      env={"CONTEXTFORK_TEST_KILL_AT": "export:staged"})  # fmt: skip
    assert proc.returncode == -signal.SIGKILL


def _blocked_fold(served: Served, repo: Repo) -> subprocess.Popen[bytes]:
    """A served `fold add` waiting for its payload on a stdin pipe that stays open."""
    before = served.served()
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextfork", "fold", "add", "1", "waits", "--session", "blk"],
        cwd=repo.path, env=served.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert served.wait_until(lambda: served.status()["running"]["running"] == 1), "not served"
    assert served.served() == before + 1
    return proc


def test_ctrl_c_reaches_the_served_command(repo: Repo, served: Served) -> None:
    served.start()
    proc = _blocked_fold(served, repo)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert b"interrupted" in err
    assert not (repo.path / ".contextfork" / "cold" / "blk" / "nodes").is_dir() or not any(
        (repo.path / ".contextfork" / "cold" / "blk" / "nodes").iterdir()
    )


def test_a_killed_client_takes_its_served_command_with_it(repo: Repo, served: Served) -> None:
    served.start()
    proc = _blocked_fold(served, repo)
    proc.kill()
    proc.wait(timeout=10)
    # its stdin pipe is still open here: only the lost client can end the command
    try:
        assert served.wait_until(lambda: served.status()["running"]["running"] == 0)
    finally:
        proc.communicate(timeout=10)


def _slow_clean_filter(repo: Repo, tmp: Path) -> Path:
    """A git clean filter that records its pid and hangs: export's `add -A` runs it as a
    grandchild of the command, which is exactly what a lost client must not leave behind."""
    pidfile = tmp / "filter.pid"
    repo.git("config", "filter.slow.clean", f"sh -c 'echo $$ > {pidfile}; sleep 120; cat'")
    repo.write(".gitattributes", "*.slow filter=slow\n")
    repo.write("big.slow", "slow\n")
    return pidfile


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of a server we did not start ourselves is reaped by init; treat it as gone
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["kill", "interrupt"])
def test_a_lost_or_interrupted_client_ends_the_served_commands_git_children_too(
    repo: Repo, served: Served, tmp_path: Path, how: str
) -> None:
    served.start()
    pidfile = _slow_clean_filter(repo, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "contextfork", "export", "--goal", "x"],
                            cwd=repo.path, env=served.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert served.wait_until(lambda: pidfile.exists() and pidfile.read_text().strip()), (
            "the clean filter never ran"
        )
        filter_pid = int(pidfile.read_text())
        assert served.status()["running"]["running"] == 1
        if how == "kill":
            proc.kill()  # the client alone, as `kill -9 <pid>` would
        else:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        assert served.wait_until(lambda: not _alive(filter_pid), timeout=10), (
            "the command's git child outlived its client"
        )
        assert served.wait_until(lambda: served.status()["running"]["running"] == 0)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def test_the_first_command_runs_cold_and_starts_a_server_for_the_next(
    repo: Repo, served: Served
) -> None:
    assert served.status()["running"] is None
    first = served.run("status", cwd=repo.path)
    assert first.returncode == 0, first.stderr
    assert served.wait_until(lambda: served.status()["running"] is not None)
    assert served.served() == 0  # the first one ran in its own process
    second = served.run("status", cwd=repo.path)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert served.served() == 1


@pytest.mark.parametrize(("flags", "env"), [
    (["-W", "error::ResourceWarning"], {}),
    ([], {"PYTHONWARNINGS": "error"}),
    (["-X", "dev"], {}),
    (["-O"], {}),
])
def test_an_interpreter_with_its_own_warnings_or_flags_runs_the_command_cold(
    repo: Repo, served: Served, flags: list[str], env: dict[str, str]
) -> None:
    served.start()
    before = served.served()
    proc = subprocess.run([sys.executable, *flags, "-m", "contextfork", "status"], cwd=repo.path,
                          env={**served.env, **env}, capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert served.served() == before
    plain = served.run("status", cwd=repo.path)
    assert plain.returncode == 0 and served.served() == before + 1


def test_off_means_no_server_is_asked_or_started(repo: Repo, served: Served) -> None:
    proc = served.cold("status", cwd=repo.path)
    assert proc.returncode == 0
    time.sleep(0.5)
    assert not any(n.startswith("s-") for n in os.listdir(served.directory))


@pytest.mark.parametrize("kind", ["open-to-all", "symlink"])
def test_a_socket_directory_others_could_write_is_never_used(
    repo: Repo, served: Served, kind: str
) -> None:
    target = served.directory
    if kind == "open-to-all":
        os.chmod(target, 0o777)
        env = served.env
    else:
        real = Path(str(target) + "-real")
        real.mkdir(mode=0o700)
        shutil.rmtree(target)
        os.symlink(real, target)
        env = served.env
    proc = subprocess.run([sys.executable, "-m", "contextfork", "status"], cwd=repo.path, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr  # ran cold
    time.sleep(0.5)
    assert not [n for n in os.listdir(target) if n.startswith("s-")]
    status = served.run("server", "status")
    assert status.returncode == 1 and "no server can run" in status.stdout + status.stderr
    if kind == "symlink":
        os.unlink(target)
        shutil.rmtree(Path(str(target) + "-real"))
        target.mkdir(mode=0o700)


def test_a_request_for_other_code_is_refused_before_anything_runs(repo: Repo, served: Served) -> None:
    info = served.start()
    conn = client.connect(info["socket"])
    assert conn is not None
    sock, pid = conn
    request = {**client._request(["export", "--goal", "x"], "0" * 20, []), "cwd": str(repo.path)}
    try:
        assert client._run_remote(sock, request, pid) is None  # the caller then runs it cold
    finally:
        sock.close()
    assert not (repo.path / ".contextfork" / "packages").exists()


def test_the_build_key_changes_when_a_source_file_changes(tmp_path: Path) -> None:
    pkg = tmp_path / "contextfork"
    shutil.copytree(Path(client.__file__).resolve().parents[1], pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    before = client.build_key(str(pkg))
    assert client.build_key(str(pkg)) == before
    target = pkg / "server" / "client.py"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert client.build_key(str(pkg)) != before


def test_the_build_key_of_a_checkout_ignores_files_dropped_beside_the_package(
    tmp_path: Path,
) -> None:
    # coverage's data files, .hypothesis/, build/: CI's run once failed when another worker's
    # coverage file changed the checkout's mtime between `server start` and `server status`
    pkg = tmp_path / "contextfork"
    shutil.copytree(Path(client.__file__).resolve().parents[1], pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'contextfork'\n")
    before = client.build_key(str(pkg))
    (tmp_path / ".coverage.host.123.abc").write_bytes(b"x")
    (tmp_path / ".hypothesis").mkdir()
    st = tmp_path.stat()
    os.utime(tmp_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert client.build_key(str(pkg)) == before
    pyproject = (tmp_path / "pyproject.toml").stat()
    os.utime(tmp_path / "pyproject.toml",
             ns=(pyproject.st_atime_ns, pyproject.st_mtime_ns + 1_000_000))  # fmt: skip
    assert client.build_key(str(pkg)) != before


def test_an_idle_server_exits_and_removes_its_socket(served: Served) -> None:
    served.env["CONTEXTFORK_SERVER_IDLE"] = "1"
    info = served.start()
    assert served.wait_until(lambda: not os.path.exists(info["socket"]), timeout=20)
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(int(info["pid"]), 0)
            time.sleep(0.1)


@pytest.mark.parametrize("idle", ["0", "nan", "-5", "soon"])
def test_an_idle_time_that_is_not_a_positive_number_of_seconds_means_the_default(
    served: Served, idle: str
) -> None:
    served.env["CONTEXTFORK_SERVER_IDLE"] = idle
    info = served.start()
    assert info["idle"] == 600  # neither gone at the first tick nor never gone
    time.sleep(1.5)
    assert served.status()["running"] is not None


def test_a_server_whose_socket_was_replaced_steps_aside(served: Served) -> None:
    info = served.start()
    os.unlink(info["socket"])
    assert served.wait_until(lambda: not _alive(int(info["pid"])), timeout=20)


def test_stop_stops_and_the_next_command_runs_cold(repo: Repo, served: Served) -> None:
    info = served.start()
    stop = served.run("server", "stop")
    assert stop.returncode == 0 and "stopped 1" in stop.stdout
    assert served.wait_until(lambda: not _alive(int(info["pid"])))
    env = clean_env({"CONTEXTFORK_SERVER": "on", "CONTEXTFORK_SERVER_DIR": str(served.directory)})
    proc = subprocess.run([sys.executable, "-m", "contextfork", "status"], cwd=repo.path, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0


def test_the_servers_log_says_when_and_why_it_started_and_stopped(
    repo: Repo, served: Served
) -> None:
    info = served.start()
    assert served.run("status", cwd=repo.path).returncode == 0
    stop = served.run("server", "stop")
    assert stop.returncode == 0, stop.stderr
    status = served.run("server", "status", "--json")
    data = json.loads(status.stdout)["data"]
    assert data["running"] is None
    tail = data["log_tail"]
    assert any(f"pid {info['pid']}: started for build {data['key']}" in ln for ln in tail), tail
    assert tail[-1].endswith("stopped (asked to stop (contextfork server stop)) after 1 command(s)")
    assert Path(data["log"]).stat().st_mode & 0o777 == 0o600
    text = served.run("server", "status").stdout
    assert "last in its log" in text and "after 1 command(s)" in text


def test_doctor_says_whether_commands_are_served_and_why_not(repo: Repo, served: Served) -> None:
    info = served.start()

    def server_check() -> dict[str, str]:
        proc = served.run("doctor", "--json", cwd=repo.path)
        return next(c for c in json.loads(proc.stdout)["data"]["checks"] if c["name"] == "server")

    assert server_check()["status"] == "ok" and f"pid {info['pid']}" in server_check()["detail"]
    os.chmod(served.directory, 0o777)
    got = server_check()
    assert got["status"] == "warning" and "chmod 700" in got["fix"]
    os.chmod(served.directory, 0o700)


def test_a_commits_checkpoint_is_served_when_a_server_runs(repo: Repo, served: Served) -> None:
    from contextfork.lifecycle import githooks

    githooks.install(repo.path)
    served.start()
    before = served.served()
    repo.write("src/app.py", "def main():\n    return 5\n")
    repo.git("add", "src/app.py")
    proc = subprocess.run(["git", "commit", "-q", "-m", "served checkpoint"], cwd=repo.path,
                          env=served.env, capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "contextfork: checkpoint " in proc.stderr
    assert served.served() == before + 1
    assert served.run("validate", cwd=repo.path).returncode == 0


def test_a_fork_that_fails_leaves_the_server_up_and_the_client_runs_cold(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno
    import socket
    import tempfile

    from contextfork import daemon

    directory = tempfile.mkdtemp(prefix="cfs-", dir="/tmp")
    server = daemon.Server(os.path.join(directory, "s-test"), "k", 60)
    try:
        server.bind()
        peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        peer.connect(server.path)
        peer.sendall(b"\x00\x00\x00\x01")  # a command's length header, not a status tag

        def no_fork() -> int:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

        monkeypatch.setattr(os, "fork", no_fork)
        server._accept()  # reads nothing: the request is read by the forked child
        (conn,) = list(server.pending)
        server._readable(conn)  # must not raise: the loop would end and take the server with it
        peer.settimeout(5)
        # The connection ends before any "started" (EOF, or a reset: the request was left
        # unread), and the client runs the command cold.
        with contextlib.suppress(ConnectionResetError):
            assert peer.recv(16) == b""
        assert server.children == {} and server.served == 0
        assert "cannot fork a command" in capsys.readouterr().err
        peer.close()
    finally:
        server.close()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("env", [
    {"PYTHONUTF8": "1"}, {"LC_ALL": "C.UTF-8"}, {"LC_ALL": "C"}, {"LC_ALL": "POSIX"},
    {"LC_ALL": "C", "PYTHONUTF8": "0"}, {"LANG": "C.utf8"}, {"PYTHONIOENCODING": "latin-1"},
    {"PYTHONIOENCODING": ":replace"}, {"PYTHONIOENCODING": "utf-8:backslashreplace"},
    {"LC_ALL": "C.UTF-8", "PYTHONUTF8": "0"},
])
def test_a_served_commands_stdio_encoding_is_the_one_its_interpreter_would_pick(
    env: dict[str, str],
) -> None:
    """The oracle is the interpreter itself, started with the client's environment."""
    code = ("import codecs, sys; from contextfork.server.child import _stdio_encoding; "
            "enc, err = _stdio_encoding(); "
            "print(codecs.lookup(enc).name, err, codecs.lookup(sys.stdout.encoding).name, "
            "sys.stdout.errors)")  # fmt: skip
    base = {k: v for k, v in clean_env().items()
            if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENCODING"))}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True,
                         text=True, check=True).stdout.split()  # fmt: skip
    assert out[:2] == out[2:], env


def test_what_the_servers_imports_read_of_the_environment_is_part_of_the_socket_key() -> None:
    """A variable read at import keeps the server's value for every command it serves: each one
    must name another server (context.KEYED_ENV), or the child refuses a client with another
    value and the command runs cold (a name missing from the list costs speed, not truth)."""
    from contextfork.server import context

    code = "import json; from contextfork import daemon; print(json.dumps(daemon.preload()))"
    proc = subprocess.run([sys.executable, "-c", code], env=clean_env({"TYPER_USE_RICH": "0"}),
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    read = json.loads(proc.stdout.splitlines()[-1])
    assert read.get("TYPER_USE_RICH") == "0"  # it does record what the imports read
    assert set(read) <= set(context.KEYED_ENV), proc.stderr


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "peercred"])
def test_the_server_reads_the_clients_context_from_the_kernels_pid_for_the_connection(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pidfd: bool
) -> None:
    """Not from the request: a client with a lower file-size limit is told apart, by /proc of
    the process that connected (its pidfd, or before Linux 6.5 its SO_PEERCRED pid)."""
    import resource
    import socket

    from contextfork.server import context, peer

    if not pidfd:
        monkeypatch.setattr(peer, "SO_PEERPIDFD", -1)  # what a kernel before 6.5 answers
    path = str(tmp_path / "s")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()
    connect = ("import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
               "time.sleep(30)")  # fmt: skip

    def connected(preexec: Callable[[], None] | None = None) -> tuple[socket.socket, subprocess.Popen[bytes]]:
        proc = subprocess.Popen([sys.executable, "-c", connect, path], preexec_fn=preexec)
        conn, _ = listener.accept()
        return conn, proc

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    key = "k"
    try:
        same, p1 = connected()
        other, p2 = connected(limited)
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        assert peer.refusal(same, key, key, now) is None
        assert peer.refusal(same, "another", key, now) == "stale: the request names other code or another context"
        why = peer.refusal(other, key, key, now)
        assert why is not None and why.endswith("resource limits"), why
        assert peer.peer_confinement(same, now) == context.confinement()
        if not pidfd:  # a pid whose process started after the connection was accepted: reused
            with pytest.raises(ValueError, match="started after"):
                peer.peer_confinement(same, 0.0)
        p1.kill()
        p1.wait()
        assert "cannot be read" in (peer.refusal(same, key, key, now) or "")  # gone: never served
    finally:
        for p in (p1, p2):
            p.kill()
            p.wait()
        for sock in (same, other, listener):
            sock.close()
