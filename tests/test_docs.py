"""The documentation site builds strictly, and its CLI reference is the live command tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return site


def test_docs_build_strict_and_cli_reference_lists_every_command(tmp_path: Path) -> None:
    import typer.main

    from contextfork.cli.app import app

    site = _build(tmp_path)
    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    names = [n for n, c in root.commands.items() if not getattr(c, "hidden", False)]  # type: ignore[attr-defined]
    assert len(names) > 10
    for name in names:
        assert f"contextfork {name}" in page, f"{name} missing from the CLI reference"
    assert "<!-- cli-reference -->" not in page  # the marker was replaced
    for html in ("concepts", "quickstart", "reference"):
        assert (site / html / "index.html").is_file()


def test_readme_is_a_front_door_not_a_spec() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "pip install contextfork" not in readme  # not published: install from a clone
    for section in ("Quick start A", "Quick start B", "Quick start C", "Run the tests"):
        assert section in readme
    for term in ("IPSF", "IPCF", "RGSC"):
        assert term not in readme or "docs/concepts.md" in readme
