"""``handoff_summary.md`` is rendered without jinja2 (issue 27: the pre-commit checkpoint's
CPU), and ``templates/handoff_summary.md.j2`` stays its specification: both render the same
bytes for every handoff here (parts filled, empty, seeded, cited, placeholders, odd text)."""

from __future__ import annotations

import random
import subprocess
import sys
from typing import Any

import pytest

from contextfork.package import handoff, handoff_md
from contextfork.resources import render_template

TEXTS = ["plain", "", "two\nlines", "tick `code` here", "ünï — dash", "  spaced  ", "0",
         "Do not rerun the migration", "never push to main", "step 7 failed again",
         "[[unfilled: the active goal, in one sentence]]", "x" * 300, ("word " * 60).strip(),
         "{{ not a template }}", "%d %s", "trailing space "]  # fmt: skip


def _text(rng: random.Random) -> str:
    return rng.choice(TEXTS)


def _maybe(rng: random.Random) -> str | None:
    return rng.choice([None, "", _text(rng)])


def _evidence(rng: random.Random) -> list[dict[str, Any]]:
    kinds = ["file", "commit", "step", "command", "url"]
    return [handoff.evidence(rng.choice(kinds), _text(rng), _maybe(rng)) for _ in range(rng.randint(0, 3))]


def _handoff(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    tree = {
        "branch": rng.choice([None, "main", "feature/x"]), "detached": False,
        "head": rng.choice([None, "a" * 40]), "worktree_tree_sha": "b" * 40,
        "summary": "1 staged, 0 modified, 0 deleted, 0 renamed, 2 untracked (0 not captured).",
        "staged": 1, "modified": 0, "deleted": 0, "renamed": 0, "untracked": 2,
        "untracked_not_captured": 0,
    }  # fmt: skip
    given: dict[str, Any] = {}
    if rng.random() < 0.6:
        given["active_goal"] = {"goal": _text(rng), "scope": [_text(rng) for _ in range(rng.randint(0, 2))],
                                "acceptance_criteria": [_text(rng) for _ in range(rng.randint(0, 2))]}  # fmt: skip
    if rng.random() < 0.6:
        given["settled_decisions"] = [
            {"decision": _text(rng), "rationale": _maybe(rng), "tradeoffs": _maybe(rng),
             "rejected_alternatives": [_text(rng) for _ in range(rng.randint(0, 2))],
             "evidence": _evidence(rng)}
            for _ in range(rng.randint(0, 3))
        ]  # fmt: skip
    if rng.random() < 0.5:
        given["failed_approaches"] = [
            handoff.failed_approach(_text(rng), _text(rng), error_excerpt=_maybe(rng),
                                    step=rng.choice([None, 0, 7]), evidence=_evidence(rng))
            for _ in range(rng.randint(0, 2))
        ]  # fmt: skip
    if rng.random() < 0.5:
        given["open_risks"] = [{"risk": _text(rng), "mitigation": _maybe(rng)} for _ in range(rng.randint(0, 2))]
    if rng.random() < 0.5:
        given["next_action"] = {"action": _text(rng), "command": _maybe(rng)}
    seeded = [handoff.failed_approach(_text(rng), _text(rng), error_excerpt=_maybe(rng), step=rng.choice([None, 3]))
              for _ in range(rng.randint(0, 2))]  # fmt: skip
    h = handoff.build(
        tree, given, goal=rng.choice([None, "the goal given on the command line"]),
        seeded_failures=seeded, goal_candidates=rng.choice([None, [], ["fix the build", "ship it"]]),
        touched_files=rng.choice([None, [], ["a.py"], ["b.py", "a b.md"]]),
    )  # fmt: skip
    sources = [{"source": "model"}, {"source": "machine-seeded"}, {"source": "not recorded"},
               {"source": "harness-summary", "harness": "codex", "step": 12, "sections": ["Goal"]}, {}]  # fmt: skip
    parts = {p: rng.choice(sources) for p in handoff.PARTS if rng.random() < 0.7}
    checked = {}
    for di, d in enumerate(h["settled_decisions"]):
        for i in range(len(d["evidence"])):
            if rng.random() < 0.7:
                checked[f"/settled_decisions/{di}/evidence/{i}"] = {"status": "verified", "detail": _text(rng)}
    for fi, f in enumerate(h["failed_approaches"]):
        checked[f"/failed_approaches/{fi}/step"] = {"status": "unverified", "detail": "no such step"}
        for i in range(len(f["evidence"])):
            checked[f"/failed_approaches/{fi}/evidence/{i}"] = {"status": "refused", "detail": _text(rng)}
    return h, parts, checked


@pytest.mark.parametrize("seed", range(4))
def test_the_summary_is_the_templates_text_for_every_kind_of_handoff(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        h, parts, checked = _handoff(rng)
        want = render_template("handoff_summary.md.j2", h=h, package_id="pkg-1", parts=parts, checked=checked)
        assert handoff_md.render(h, "pkg-1", parts, checked) == want


def test_the_default_handoff_and_a_bare_record_match_the_template() -> None:
    h = handoff.build({"branch": "main", "head": "c" * 40, "worktree_tree_sha": "d" * 40, "summary": "clean."})
    want = render_template("handoff_summary.md.j2", h=h, package_id="p", parts={}, checked={})
    assert handoff.render_markdown(h, "p") == want


def test_an_export_renders_the_summary_without_importing_jinja2(tmp_path: object) -> None:
    code = ("import sys; from pathlib import Path; from contextfork.package.export import ExportOptions, export;"
            "export(Path(sys.argv[1]), ExportOptions(trigger='pre-commit'));"
            "print('jinja2' in sys.modules)")  # fmt: skip
    from tests.helpers import clean_env, make_repo

    repo = make_repo(tmp_path / "r")  # type: ignore[operator]
    repo.write("new.txt", "x\n")
    out = subprocess.run([sys.executable, "-c", code, str(repo.path)], env=clean_env(), capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "False"
