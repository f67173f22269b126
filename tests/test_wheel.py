"""The built wheel carries templates/ and schemas/ and works outside the source tree."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from tests.helpers import Repo, clean_env

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_installs_into_a_fresh_venv_and_exports(tmp_path: Path, repo: Repo) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        check=True, capture_output=True, env=clean_env(),
    )  # fmt: skip
    wheel = next(dist.glob("contextfork-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    # Offline: third-party dependencies come from the test interpreter's site-packages (appended
    # after the venv's own, so the wheel's contextfork wins over the editable checkout).
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, env=clean_env(),
    )  # fmt: skip
    where = subprocess.check_output(
        [str(py), "-c", "import contextfork.resources as r; print(r.data_dir('templates')); print(r.data_dir('schemas'))"],
        text=True, cwd=tmp_path,
    ).split()  # fmt: skip
    assert all(str(env_dir) in w and "_data" in w for w in where), where
    exe = env_dir / "bin" / "contextfork"
    res = subprocess.run(
        [str(exe), "export", "--json"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert res.returncode == 0, res.stderr
    assert '"ok": true' in res.stdout
