"""How long `contextfork view` takes on the 2.76 MB development Claude Code session.

Folds the session into a fresh repository's cold store first (so the page shows every cold
node, re-verified), then times whole `contextfork view` processes (median of 5), without and
with the replay page. Target: ≤ 2 s for a 3 MB session. Then the pages: the largest one and
page 1 (target < 1 MB: large blocks, cold originals and the search index load on demand), and
page 1's load in headless Chromium (median of 7 loads, when Chromium and Selenium are there).

    python bench/view_bench.py
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = (ROOT.parent / "shared" / "data" / "transcripts" / "claude-code"
           / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")  # fmt: skip


def run(*args: str, cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "contextfork", *args], cwd=cwd, check=True,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - t0


def main() -> int:
    if not SESSION.is_file():
        print(f"{SESSION} is absent (../shared)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cf-view-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q",
                        "--allow-empty", "-m", "i"], cwd=repo, check=True)  # fmt: skip
        run("fold", "session", "--transcript", str(SESSION), "--session", SESSION.stem, cwd=repo)
        size = SESSION.stat().st_size / 1e6
        for label, extra in (("view", []), ("view --replay", ["--replay"])):
            times = [run("view", "--transcript", str(SESSION), *extra, cwd=repo) for _ in range(5)]
            print(f"{label:<15} {size:.2f} MB session: median {statistics.median(times):.2f} s, "
                  f"max {max(times):.2f} s (whole process, 5 runs)")
        site = repo / ".contextfork" / "view"
        pages = {p.name: p.stat().st_size / 1e6 for p in site.glob("*.html")}
        big = max(pages, key=lambda k: pages[k])
        print(f"pages: index.html {pages['index.html']:.2f} MB, largest {big} {pages[big]:.2f} MB, "
              f"{sum(1 for p in site.rglob('*') if p.is_file())} files in the site")  # fmt: skip
        load = chromium_load(site / "index.html")
        print(f"index.html in headless Chromium: {load}")
    return 0


def chromium_load(page: Path, runs: int = 7) -> str:
    """Median ``loadEventEnd`` of ``page`` over ``runs`` loads (after one warm-up load)."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return "not measured (selenium is not installed)"
    if not (chromium and driver):
        return "not measured (no chromium/chromedriver)"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    with tempfile.TemporaryDirectory(prefix="cf-chromium-") as profile:
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,900", f"--user-data-dir={profile}"):  # fmt: skip
            opts.add_argument(arg)
        browser = webdriver.Chrome(options=opts, service=Service(driver))
        try:
            browser.get(page.as_uri())
            loads = []
            for _ in range(runs):
                browser.get(page.as_uri())
                loads.append(browser.execute_script(
                    "return performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
        finally:
            browser.quit()
    return f"load event median {statistics.median(loads):.2f} s, max {max(loads):.2f} s ({runs} loads)"


if __name__ == "__main__":
    raise SystemExit(main())
