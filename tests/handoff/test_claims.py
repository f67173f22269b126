"""The model writes the parts, the machine checks every reference it can, claim by claim;
invented evidence is refused with one line per problem and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfork.hashing import canonical_sha256, sha256_bytes
from contextfork.package.claims_models import HandoffClaims
from tests.harness import cc_fixture
from tests.helpers import Repo, cli

ERR = "AssertionError: 5434 != 5433"


def _packages(repo: Repo) -> list[Path]:
    base = repo.path / ".contextfork" / "packages"
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))


def _export(repo: Repo, parts: dict[str, Any], transcript: Path) -> Any:
    (repo.path / ".git" / "h.json").write_text(json.dumps(parts))
    return cli("export", "--handoff", str(repo.path / ".git" / "h.json"), "--transcript",
               str(transcript), "--json", cwd=repo.path)  # fmt: skip


def _written(repo: Repo) -> dict[str, Any]:
    return {
        "active_goal": {"goal": "Fix the billing port bug", "acceptance_criteria": ["tests pass"]},
        "settled_decisions": [{
            "decision": "The test is right: port 5433 is the contract",
            "evidence": [
                {"kind": "step", "ref": "toolu_02", "note": f"the failure `{ERR}`"},
                {"kind": "command", "ref": "pytest -q tests/test_billing.py", "note": "exit 1"},
                {"kind": "file", "ref": "src/app.py:1"},
                {"kind": "commit", "ref": repo.head},
                {"kind": "url", "ref": "https://example.com/ports"},
            ],
        }],
        "failed_approaches": [{
            "approach": "ran the billing test unchanged", "barred_action": "re-run it unchanged",
            "step": 2, "error_excerpt": f"FAILED tests/test_billing.py::test_charge - {ERR}",
        }],
        "next_action": {"action": "Set the port back to 5433 in config"},
    }  # fmt: skip


def test_model_written_parts_are_verified_claim_by_claim_and_recorded(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "t" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    res = _export(repo, _written(repo), t)
    assert res.returncode == 0, res.stdout + res.stderr
    pkg = Path(res.json()["data"]["path"])
    record = json.loads((pkg / "handoff_claims.json").read_text())
    HandoffClaims.model_validate(record)  # schemas/handoff-claims.schema.json
    status = {c["where"]: c["status"] for c in record["claims"]}
    assert status == {
        "/settled_decisions/0/evidence/0": "verified",
        "/settled_decisions/0/evidence/1": "verified",
        "/settled_decisions/0/evidence/2": "verified",
        "/settled_decisions/0/evidence/3": "verified",
        "/settled_decisions/0/evidence/4": "unverified",  # a URL cannot be checked
        "/failed_approaches/0/step": "verified",
    }
    assert record["parts"]["active_goal"] == {"source": "model"}
    assert record["parts"]["open_risks"] == {"source": "not recorded"}
    summary = (pkg / "handoff_summary.md").read_text()
    assert "— verified: step 2 exists and says what is cited" in summary
    assert "[[unfilled" not in summary and "not recorded" in summary  # open risks
    assert cli("validate", str(pkg), cwd=repo.path).returncode == 0
    brief = cli("resume", str(pkg), cwd=repo.path).stdout
    assert "5 verified by the machine, 1 not checkable" in brief
    assert "[[unfilled" not in brief and "*(written by the model)*" in brief


def test_invented_evidence_is_refused_one_line_per_problem_and_nothing_is_written(
    repo: Repo, tmp_path: Path
) -> None:
    t = cc_fixture.write(tmp_path / "t" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    parts = _written(repo)
    parts["settled_decisions"][0]["evidence"] = [
        {"kind": "step", "ref": "99"},  # no such step
        {"kind": "step", "ref": "toolu_02", "note": "it said `all 12 tests passed`"},  # not said
        {"kind": "command", "ref": "pytest -q tests/test_billing.py", "note": "exit 0"},  # exit 1
        {"kind": "command", "ref": "make deploy"},  # never ran
        {"kind": "file", "ref": "src/nowhere.py"},
        {"kind": "file", "ref": "src/app.py@sha256:" + "0" * 64},
        {"kind": "commit", "ref": "deadbeefdeadbeef"},
        {"kind": "file", "ref": "../outside.txt"},
    ]
    parts["failed_approaches"][0]["step"] = 42
    res = _export(repo, parts, t)
    assert res.returncode == 1
    problems = res.json()["problems"]
    assert len(problems) == 9 and all(p["code"] == "claim_refused" for p in problems)
    lines = {p["path"]: p["message"] for p in problems}
    assert "no such step" in lines["handoff/settled_decisions/0/evidence/0"]
    assert "does not contain `all 12 tests passed`" in lines["handoff/settled_decisions/0/evidence/1"]
    assert "never exited 0 (step 2: exit 1)" in lines["handoff/settled_decisions/0/evidence/2"]
    assert "no tool call in the session ran" in lines["handoff/settled_decisions/0/evidence/3"]
    assert "neither in the working tree nor in the diff" in lines["handoff/settled_decisions/0/evidence/4"]
    assert "sha256 differs" in lines["handoff/settled_decisions/0/evidence/5"]
    assert "no such commit" in lines["handoff/settled_decisions/0/evidence/6"]
    assert "not a path inside" in lines["handoff/settled_decisions/0/evidence/7"]
    assert "no such step" in lines["handoff/failed_approaches/0/step"]
    assert _packages(repo) == []
    human = _export(repo, parts, t)
    assert human.returncode == 1


def test_a_deleted_file_cited_from_the_diff_is_verified(repo: Repo, tmp_path: Path) -> None:
    (repo.path / "README.md").unlink()
    parts = {"settled_decisions": [{"decision": "drop the readme",
                                    "evidence": [{"kind": "file", "ref": "README.md"}]}]}  # fmt: skip
    (repo.path / ".git" / "h.json").write_text(json.dumps(parts))
    res = cli("export", "--handoff", str(repo.path / ".git" / "h.json"), "--json", cwd=repo.path)
    assert res.returncode == 0, res.stdout
    record = json.loads((Path(res.json()["data"]["path"]) / "handoff_claims.json").read_text())
    assert record["claims"][0]["status"] == "verified"
    assert "in the diff" in record["claims"][0]["detail"]


def test_a_cited_test_is_checked_against_its_file(repo: Repo, tmp_path: Path) -> None:
    repo.write("tests/test_port.py", "def test_port_is_5433():\n    assert True\n")
    t = cc_fixture.write(tmp_path / "t" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    ok = {"settled_decisions": [{"decision": "port 5433", "evidence": [
        {"kind": "test", "ref": "tests/test_port.py::test_port_is_5433[param]"}]}]}  # fmt: skip
    res = _export(repo, ok, t)
    assert res.returncode == 0, res.stdout
    bad = {"settled_decisions": [{"decision": "port 5433", "evidence": [
        {"kind": "test", "ref": "tests/test_port.py::test_invented"}]}]}  # fmt: skip
    res = _export(repo, bad, t)
    assert res.returncode == 1
    assert "does not define test_invented" in res.json()["problems"][0]["message"]


def test_validate_checks_the_claims_record_against_its_schema(repo: Repo, tmp_path: Path) -> None:
    """``handoff_claims.json`` is optional, but when a package carries it, ``validate`` holds it
    to its schema like every other file (a re-hashed record that says a claim was 'trusted' is
    refused, not read)."""
    t = cc_fixture.write(tmp_path / "t" / f"{cc_fixture.SESSION}.jsonl", repo.path)
    res = _export(repo, _written(repo), t)
    pkg = Path(res.json()["data"]["path"])
    record = json.loads((pkg / "handoff_claims.json").read_text())
    record["claims"][0]["status"] = 7
    (pkg / "handoff_claims.json").write_text(json.dumps(record))
    manifest = json.loads((pkg / "manifest.json").read_text())
    data = (pkg / "handoff_claims.json").read_bytes()
    for entry in manifest["files"]:
        if entry["path"] == "handoff_claims.json":
            entry["sha256"], entry["size"] = sha256_bytes(data), len(data)
    manifest["package_sha256"] = canonical_sha256(manifest["files"])
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=2))
    out = cli("validate", pkg.name, "--json", cwd=repo.path)
    problems = out.json()["data"]["problems"] if "problems" in out.json()["data"] else out.json()["problems"]
    assert any(p["code"] == "schema_invalid" and p.get("path") == "handoff_claims.json"
               for p in problems), problems
    assert out.returncode != 0
