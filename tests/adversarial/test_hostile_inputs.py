"""The hostile-input table: every row is one invocation a user, a script or an attacker can make.

Each row names its documented exit code (README "Exit codes": 0 ok, 1 failed check, 2 usage or
bad input file, 3 tampered, 4 not found, 5 drift). For every row: the exit code is the documented
one, nothing prints a traceback, the command ends within the timeout (a FIFO or /dev/zero must
not hang it), and a failure is exactly one line on stderr. The one exception is a check that
lists problems (``validate`` of a damaged package): there every stderr line is one problem line
(``error: <code>: ...``), still never a usage box.

Hooks and the status line are run by the harness and document exit 0 whatever happens.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from tests.adversarial.world import World, build_world
from tests.helpers import clean_env

TIMEOUT = 30.0
PROBLEM_LINE = re.compile(r"^(error|warning): [a-z_]+: ")


@dataclass(frozen=True)
class Row:
    id: str
    args: tuple[str, ...]
    code: int
    cwd: str = "{repo}"
    stdin: bytes | str | None = None  # str: a path placeholder to feed as stdin
    env: tuple[tuple[str, str], ...] = ()
    problems: bool = False  # stderr lists problems (one per line) instead of one error line


def R(id: str, *args: str, code: int, **kw: object) -> Row:
    return Row(id, args, code, **kw)  # type: ignore[arg-type]


SMALL_LINES = (("CONTEXTFORK_MAX_LINE_BYTES", "1000000"),)
HOOK_STDIN = b'{"session_id":"s1","transcript_path":"%s","cwd":"%s","prompt":"billing port"}'

ROWS: list[Row] = [
    # --- status --transcript -------------------------------------------------------------
    R("status-empty", "status", "--transcript", "{empty}", code=2),
    R("status-binary", "status", "--transcript", "{binary}", code=2),
    R("status-fifo", "status", "--transcript", "{fifo}", code=2),
    R("status-devzero", "status", "--transcript", "{devzero}", code=2),
    R("status-dir", "status", "--transcript", "{dir}", code=2),
    R("status-missing", "status", "--transcript", "{missing}", code=4),
    R("status-text", "status", "--transcript", "{text}", code=2),
    R("status-latin1", "status", "--transcript", "{latin1}", code=2),
    R("status-bom", "status", "--transcript", "{bom}", code=0),
    R("status-deep-only", "status", "--transcript", "{deep_only}", code=2),
    R("status-deep-mixed", "status", "--transcript", "{deep_mixed}", code=0),
    R("status-deep-usage", "status", "--transcript", "{deep_usage}", code=0),
    R("status-huge-only", "status", "--transcript", "{huge_only}", code=2, env=SMALL_LINES),
    R("status-huge-mixed", "status", "--transcript", "{huge_mixed}", code=0, env=SMALL_LINES),
    R("status-nonutf8-name", "status", "--transcript", "{nonutf8}", code=0),
    R("status-truncated", "status", "--transcript", "{truncated}", code=0),
    R("status-window-negative", "status", "--context-window", "-5", code=2),
    R("status-window-word", "status", "--context-window", "lots", code=2),
    R("status-unborn", "status", code=0, cwd="{unborn}"),
    R("status-detached", "status", code=0, cwd="{detached}"),
    # --- render / replay -----------------------------------------------------------------
    R("render-fifo", "render", "--transcript", "{fifo}", code=2),
    R("render-devzero", "render", "--transcript", "{devzero}", code=2),
    R("render-dir", "render", "--transcript", "{dir}", code=2),
    R("render-binary", "render", "--transcript", "{binary}", code=2),
    R("render-deep-array", "render", "--transcript", "{deep_array}", code=2),
    R("render-bad-array", "render", "--transcript", "{bad_array}", code=2),
    R("render-bom-array", "render", "--transcript", "{bom_array}", code=0),
    R("render-bom", "render", "--transcript", "{bom}", code=0),
    R("render-k-zero", "render", "--transcript", "{good}", "--k", "0", code=2),
    R("render-k-negative", "render", "--transcript", "{good}", "--k", "-3", code=2),
    R("render-policy-bogus", "render", "--transcript", "{good}", "--policy", "bogus", code=2),
    R("render-step-word", "render", "--transcript", "{good}", "--step", "ten", code=2),
    R("render-peek-missing", "render", "--transcript", "{good}", "--peek", "F999", code=4),
    R("render-missing-transcript-option", "render", code=2),
    R("replay-fifo", "replay", "--transcript", "{fifo}", code=2),
    R("replay-devzero", "replay", "--transcript", "{devzero}", code=2),
    R("replay-policy-bogus", "replay", "--transcript", "{good}", "--policy", "nope", code=2),
    R("replay-price-fifo", "replay", "--transcript", "{good}", "--price-card", "{fifo}", code=2),
    R("replay-price-devzero", "replay", "--transcript", "{good}", "--price-card", "{devzero}",
      code=2),
    R("replay-price-bad", "replay", "--transcript", "{good}", "--price-card", "{price_bad}",
      code=2),
    # --- fold ----------------------------------------------------------------------------
    R("fold-session-fifo", "fold", "session", "--transcript", "{fifo}", code=2),
    R("fold-session-devzero", "fold", "session", "--transcript", "{devzero}", code=2),
    R("fold-session-deep-mixed", "fold", "session", "--transcript", "{deep_mixed}",
      "--session", "deep", code=0),
    R("fold-session-bom", "fold", "session", "--transcript", "{bom}", "--session", "bom", code=0),
    R("fold-session-dotdot", "fold", "session", "--transcript", "{good}", "--session", "../x",
      code=2),
    R("fold-session-absolute", "fold", "session", "--transcript", "{good}", "--session", "/tmp/x",
      code=2),
    R("fold-add-fifo", "fold", "add", "90", "s", "--file", "{fifo}", "--session", "a", code=2),
    R("fold-add-devzero", "fold", "add", "91", "s", "--file", "{devzero}", "--session", "a",
      code=2),
    R("fold-add-dir", "fold", "add", "92", "s", "--file", "{dir}", "--session", "a", code=2),
    R("fold-add-stdin-devzero", "fold", "add", "93", "s", "--session", "a", code=2,
      stdin="{devzero}"),
    R("fold-add-step-word", "fold", "add", "abc", "s", "--file", "{text}", code=2),
    R("fold-add-missing-args", "fold", "add", code=2),
    R("fold-scan-dash-query", "fold", "scan", "-weird billing", "--session", "w", code=0),
    R("fold-scan-dashdash", "fold", "scan", "--session", "w", "--", "-x port", code=0),
    R("fold-recall-dash-query", "fold", "recall", "-port", "--session", "w", code=0),
    R("fold-recall-limit-zero", "fold", "recall", "port", "--limit", "0", code=2),
    R("fold-hydrate-missing", "fold", "hydrate", "99999", "--session", "w", code=4),
    R("fold-hydrate-dotdot", "fold", "hydrate", "../../etc/passwd", "--session", "w", code=2),
    R("fold-show-tampered", "fold", "show", "1", "--session", "wt", code=3),
    R("fold-validate-tampered", "fold", "validate", "--session", "wt", code=3, problems=True),
    R("fold-no-subcommand", "fold", code=2),
    R("fold-unknown-subcommand", "fold", "explode", code=2),
    # --- export --------------------------------------------------------------------------
    R("export-transcript-fifo", "export", "--transcript", "{fifo}", code=2),
    R("export-transcript-devzero", "export", "--transcript", "{devzero}", code=2),
    R("export-handoff-fifo", "export", "--handoff", "{fifo}", code=2),
    R("export-handoff-devzero", "export", "--handoff", "{devzero}", code=2),
    R("export-handoff-binary", "export", "--handoff", "{handoff_bin}", code=2),
    R("export-file-cap-negative", "export", "--file-cap", "-1", code=2),
    R("export-file-cap-word", "export", "--file-cap", "big", code=2),
    R("export-repo-missing", "export", "--repo", "{missing}", code=4),
    R("export-not-a-repo", "export", code=4, cwd="{norepo}"),
    R("export-detached", "export", "--goal", "detached", code=0, cwd="{detached_w}"),
    # --- validate / resume / packages ----------------------------------------------------
    R("validate-unknown-option", "validate", "--bogus", code=2),
    R("validate-missing-id", "validate", "20990101T000000000Z-nopeee", code=4),
    R("validate-dotdot", "validate", "../../../etc", code=4),
    R("validate-absolute-dir", "validate", "/etc", code=4),
    R("validate-bad-manifest", "validate", "20200101T000000000Z-badman", code=3, problems=True),
    R("validate-missing-file", "validate", "20200101T000000000Z-missng", code=3, problems=True),
    R("validate-edited-file", "validate", "20200101T000000000Z-edited", code=3, problems=True),
    R("validate-fifo-in-package", "validate", "20200101T000000000Z-fifoin", code=3,
      problems=True),
    R("validate-symlink-in-package", "validate", "20200101T000000000Z-lnkout", code=3,
      problems=True),
    R("validate-empty-package", "validate", "20200101T000000000Z-empty0", code=3, problems=True),
    R("validate-unborn", "validate", code=4, cwd="{unborn}"),
    # A package dir that is a symlink out of the repo is not a package here (never followed).
    R("validate-symlinked-package-dir", "validate", "20200101T000000000Z-escape", code=4),
    R("resume-symlinked-package-dir", "resume", "20200101T000000000Z-escape", code=4),
    R("packages-show-symlinked-dir", "packages", "show", "20200101T000000000Z-escape", code=4),
    R("validate-copy-by-path", "validate", "{outside_pkg}", code=0),
    R("export-unborn", "export", "--goal", "first", "--repo", "{unborn_w}", code=0),
    R("resume-detached-no-package", "resume", code=4, cwd="{detached}"),
    R("resume-missing-id", "resume", "20990101T000000000Z-nopeee", code=4),
    # a copied package has no provenance record: refused in one line before it is read
    R("resume-bad-manifest", "resume", "20200101T000000000Z-badman", "--no-mark-consumed", code=3),
    R("resume-unborn", "resume", code=4, cwd="{unborn}"),
    R("packages-show-dotdot", "packages", "show", "../../..", code=4),
    R("packages-clean-keep-negative", "packages", "clean", "--keep", "-1", code=2),
    R("packages-clean-keep-word", "packages", "clean", "--keep", "all", code=2),
    # --- hooks / hook / statusline / git-hook / log / policy / sharing --------------------
    R("hooks-install-keep-negative", "hooks", "install", "--git", "--keep", "-1", code=2),
    R("hooks-install-keep-word", "hooks", "install", "--git", "--keep", "many", code=2),
    R("git-hook-bogus", "git-hook", "pre-explode", code=2),
    R("log-limit-negative", "log", "-n", "-1", code=2),
    R("log-limit-word", "log", "-n", "x", code=2),
    R("log-unborn", "log", code=0, cwd="{unborn}"),
    R("policy-show-corrupt", "policy", "show", code=2, cwd="{badpolicy}"),
    # A remote git cannot reach is "git refused" (1); a damaged package is never sent (3).
    R("pull-no-remote", "pull", "nowhere", code=1),
    R("push-no-remote", "push", "nowhere", "{pkg}", code=1),
    # the damaged copies have no provenance record: left out, and the remote is refused by git
    R("push-damaged-packages", "push", "nowhere", code=1),
    R("hook-garbage-stdin", "hook", "user-prompt-submit", code=0, stdin=b"\x00\xff{{{"),
    R("hook-devzero-stdin", "hook", "user-prompt-submit", code=0, stdin="{devzero}"),
    R("hook-transcript-fifo", "hook", "user-prompt-submit", code=0, stdin=b"fifo"),
    R("hook-transcript-devzero", "hook", "user-prompt-submit", code=0, stdin=b"devzero"),
    R("statusline-garbage", "statusline", code=0, stdin=b"[1,2"),
    R("statusline-devzero-stdin", "statusline", code=0, stdin="{devzero}"),
    R("statusline-transcript-fifo", "statusline", code=0, stdin=b"fifo"),
    R("statusline-transcript-devzero", "statusline", code=0, stdin=b"devzero"),
    R("statusline-transcript-deep", "statusline", code=0, stdin=b"deep_usage"),
    R("mcp-garbage-stdin", "mcp", code=0, stdin=b"garbage\n\x00\xff\n[1,2\n{}\n"),
    R("mcp-empty-stdin", "mcp", code=0, stdin=b""),
    R("mcp-binary-stdin", "mcp", code=0, stdin="{binary}"),
    # --- the top level -------------------------------------------------------------------
    R("no-command", code=2),
    R("unknown-command", "explode", code=2),
    R("unknown-global-option", "--explode", code=2),
    R("repo-is-a-file", "packages", "list", "--repo", "{afile}", code=4),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build_world(tmp_path_factory.mktemp("hostile"))


def _stdin(row: Row, w: World) -> tuple[bytes | None, str | None]:
    """(bytes to send, or a file path to connect as stdin)."""
    if row.stdin is None:
        return b"", None
    if isinstance(row.stdin, str):
        return None, w.fmt(row.stdin)
    key = row.stdin.decode("utf-8", "replace")
    if key in w.p:  # a harness payload naming a hostile transcript
        target = w.p[key]
        return HOOK_STDIN % (target.encode(), w.p["repo"].encode()), None
    return row.stdin, None


def invoke(row: Row, w: World) -> tuple[int, str, str, float]:
    args = [os.fsencode(w.fmt(a)) for a in row.args]
    data, path = _stdin(row, w)
    env = clean_env(dict(row.env))
    env["XDG_CACHE_HOME"] = str(w.root / "cache")
    started = time.monotonic()
    with open(path, "rb") if path else open(os.devnull, "rb") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "contextfork", *args], cwd=w.fmt(row.cwd), env=env,
            input=data if path is None else None, stdin=fh if path else None,
            capture_output=True, timeout=TIMEOUT, check=False,
        )
    took = time.monotonic() - started
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"), took)


def test_the_table_is_big_enough() -> None:
    assert len(ROWS) >= 60
    assert len({r.id for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_hostile_input_gets_documented_exit_code_and_one_line(row: Row, world: World) -> None:
    # One row per test (not all rows in a module fixture): xdist spreads the rows over its
    # workers, and each worker builds the small world once.
    code, out, err, took = invoke(row, world)  # a hang fails here (TIMEOUT)
    where = f"{row.id}: exit {code} in {took:.1f}s\nstdout: {out[:600]}\nstderr: {err[:1500]}"
    assert "Traceback" not in err and "Traceback" not in out, where
    assert "internal error" not in err, where
    assert code == row.code, where
    lines = err.splitlines()
    if code == 0:
        assert len(lines) <= 1, where
    elif row.problems:
        assert lines and all(PROBLEM_LINE.match(line) for line in lines), where
    else:
        assert len(lines) == 1, where
        assert "╭" not in err and "Usage:" not in err, where
