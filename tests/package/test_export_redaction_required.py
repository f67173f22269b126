"""Export refuses when the secret scrubber cannot load (issue 27 item 3): no fail-open path
stores transcript-derived text unscrubbed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from contextfork.errors import ExitCode, RedactionUnavailable
from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, clean_env

# ``None`` in sys.modules makes ``import contextfork.redact`` raise ImportError, as a broken
# install would.
_BROKEN = (
    "import sys; sys.modules['contextfork.redact'] = None; "
    "from contextfork.entry import main; sys.exit(main(sys.argv[1:]))"
)


def _packages(repo: Repo) -> list[str]:
    pk = repo.path / ".contextfork" / "packages"
    return sorted(p.name for p in pk.iterdir()) if pk.is_dir() else []


def test_export_refuses_with_a_named_error_when_redaction_cannot_load(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.write("notes.txt", "untracked\n")
    monkeypatch.setitem(sys.modules, "contextfork.redact", None)
    with pytest.raises(RedactionUnavailable) as err:
        export(repo.path, ExportOptions(goal="token ghp_" + "a" * 36))
    assert err.value.exit_code == ExitCode.INTEGRITY
    assert _packages(repo) == []


def test_the_cli_exits_3_and_says_why(repo: Repo) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _BROKEN, "export", "--goal", "x"], cwd=repo.path,
        env=clean_env({"CONTEXTFORK_SERVER": "off"}), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "secret redaction cannot load" in proc.stderr
    assert _packages(repo) == []


def test_the_footprint_thresholds_do_not_fall_back_when_the_policy_reader_cannot_load(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A broken install is loud, not a silent switch to the default thresholds.
    from contextfork.harness.hooks.footprint import load_thresholds

    monkeypatch.setitem(sys.modules, "contextfork.telemetry.policy", None)
    with pytest.raises(ImportError):
        load_thresholds(repo.path)
