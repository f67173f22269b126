"""The cold store's writer lock: filelock, so the store imports and locks on every platform."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from contextfork.cold import api
from contextfork.cold.layout import layout_at, store_lock
from tests.helpers import clean_env

# A platform without fcntl (Windows): the import of fcntl fails there.
NO_FCNTL = """
import sys
sys.modules["fcntl"] = None
from pathlib import Path
from contextfork.cold import api
store = Path(sys.argv[1])
api.fold_step(1, "step one touched app.py", "payload\\n", store_dir=store, intents=["file:app.py"])
print(api.page_in("app.py", store_dir=store).data["selected"][0]["step_id"])
"""

HOLDER = """
import sys, time
from pathlib import Path
from contextfork.cold.layout import layout_at, store_lock
with store_lock(layout_at(Path(sys.argv[1]))):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_the_cold_store_folds_and_scans_where_fcntl_is_missing(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", NO_FCNTL, str(tmp_path / "cold" / "s")],
                          capture_output=True, text=True, env=clean_env(), check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"


def test_a_fold_waits_while_another_process_holds_the_store_lock(tmp_path: Path) -> None:
    store = tmp_path / "cold" / "s"
    api.fold_step(1, "seed", "seed", store_dir=store)
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(store), "1.5"],
                          stdout=subprocess.PIPE, text=True, env=clean_env()) as holder:  # fmt: skip
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        api.fold_step(2, "second", "payload", store_dir=store)
        waited = time.monotonic() - start
    assert waited >= 0.5, f"the fold did not wait for the lock ({waited:.2f} s)"
    assert api.status(store_dir=store).data["nodes"] == 2


def test_the_lock_file_stays_inside_the_store_and_is_not_followed_as_a_symlink(
    tmp_path: Path,
) -> None:
    store = tmp_path / "cold" / "s"
    api.fold_step(1, "seed", "seed", store_dir=store)
    lay = layout_at(store)
    outside = tmp_path / "outside"
    lay.lock_file.unlink()
    lay.lock_file.symlink_to(outside)
    try:
        with store_lock(lay):
            pass
    except OSError:
        pass  # refused to open through the link: fine
    assert not outside.exists()
