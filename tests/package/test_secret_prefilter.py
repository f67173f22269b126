"""The keyword prefilter of package secret scans finds exactly what every rule on every text finds.

``secrets.scan_files`` runs on each text only the rules whose keywords it holds
(``redact.rules_by_text``); this must never lose a secret, whatever texts sit side by side.
"""

from __future__ import annotations

import json
import random

from contextfork.package import secrets
from contextfork.redact import RULES, find_secrets, rules_by_text
from tests.adversarial.secret_corpus import FAILED_COMMAND, corpus_lines


def _brute(text: str) -> list[tuple[int, int, str]]:
    return find_secrets(text, RULES)


def test_rules_by_text_keeps_every_rule_that_can_match() -> None:
    rng = random.Random(15)
    lines = [*corpus_lines(), FAILED_COMMAND, "plain words", "", "KEY=short", "İ Σ unicode"]
    for _ in range(200):
        texts = [rng.choice(lines) + rng.choice(["", " tail", "\nnext"]) for _ in range(rng.randint(1, 9))]
        for text, rules in zip(texts, rules_by_text([t.lower() for t in texts]), strict=True):
            assert find_secrets(text, rules) == _brute(text), text


def test_package_scan_finds_every_planted_secret_in_json_snapshots_and_patches() -> None:
    lines = corpus_lines()
    files = {
        "handoff.json": json.dumps({"active_goal": {"goal": lines[0], "scope": lines[1:4]}}).encode(),
        "untracked/notes.txt": "\n".join(lines[4:10]).encode(),
        "untracked/binary.bin": b"\0" + lines[10].encode(),
        "git_diff.patch": ("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n ctx\n+"
                           + "\n+".join(line.replace("\n", " ") for line in lines[11:])).encode(),
    }  # fmt: skip
    expected: dict[str, list[str]] = {}
    for rel, data in files.items():
        for key, text in secrets._texts_of(rel, data):
            kinds = {k for _s, _e, k in _brute(text)}
            if kinds:
                expected[key] = sorted(set(expected.get(key, [])) | kinds)
    assert secrets.scan_files(files) == expected
    assert len(expected) == 3 and "binary.bin" not in expected


def _added_text_line_by_line(patch: bytes) -> dict[str, str]:
    """The reading of a patch's added lines that ``patch_added_text`` does faster."""
    added: dict[str, list[str]] = {}
    current: str | None = None
    for raw in patch.split(b"\n"):
        if raw.startswith(b"+++ "):
            name = raw[4:].decode("utf-8", "replace")
            current = None if name == "/dev/null" else name.removeprefix("b/")
        elif raw.startswith(b"diff --git "):
            current = None
        elif current is not None and raw.startswith(b"+"):
            added.setdefault(current, []).append(raw[1:].decode("utf-8", "replace"))
    return {path: "\n".join(lines) for path, lines in added.items()}


def test_patch_added_text_reads_every_added_line_of_hostile_patches() -> None:
    rng = random.Random(142)
    pieces = [b"+", b"+++ b/x", b"+++ b/y", b"+++ /dev/null", b"diff --git a b", b"\n", b"\r",
              b"\xc3", b"\xa9", b"\xff", b"a", b"++ ", b" ", b"-"]  # fmt: skip
    for _ in range(20000):
        patch = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 16)))
        assert secrets.patch_added_text(patch) == _added_text_line_by_line(patch), patch
