"""`contextfork demo` walks the whole story on the embedded sample session."""

from __future__ import annotations

from contextfork import demo
from contextfork.harness.sample_session import SESSION_ID
from tests.helpers import run_cli


def test_demo_walks_badge_fold_page_in_export_validate_resume() -> None:
    res = run_cli("demo", "--json")
    assert res.returncode == 0, res.stderr
    facts = res.json()["data"]["facts"]
    assert facts["badge"].startswith("[ ") and "Step 8" in facts["badge"]
    assert facts["fold"]["steps"] == 8
    assert facts["paged_in"] == [7, 5, 4]  # selection order
    assert facts["page_in_chars"] <= 9_500
    assert facts["validate"]["valid"] is True
    assert facts["resume"]["drifted"] is True
    assert facts["resume"]["changed"] == ["src/billing.py"]
    steps = res.json()["data"]["steps"]
    assert [s.split()[0] for s in steps] == [
        "status",
        "fold",
        "page-in",
        "export",
        "validate",
        "resume",
    ]


def test_the_export_and_validate_pair_still_runs_alone() -> None:
    res = demo.run_demo(steps=[demo._step_export, demo._step_validate])
    assert res.ok
    assert res.data["facts"]["validate"]["valid"] is True
    assert SESSION_ID not in str(res.data["facts"]["export"])
