"""Extract the slice bench's second held-out Claude Code set (real subagents) outside the repo.

    python bench/slice_legacy_set.py [--git-dir DIR] [--out ~/.cache/contextfork-bench/cc-legacy]

Real Claude Code sessions of another user and project than every other set (the dev sets come
from marot/spotter and gruckion/mini-swe-agent): SWORDIntel/claude-backups, a backup of its
owner's ``~/.claude`` (and ``~/.config/claude``) folders committed over time. They were written
by Claude Code 1.0.80–1.0.90, which kept a subagent's lines in the parent's own file, marked
``"isSidechain": true`` (a sidechain starts with a user line whose ``parentUuid`` is null and
whose text is the Task call's prompt), where today's versions write ``<id>/subagents/agent-*``.

Rule, fixed (and the set frozen) before any of it was scored and before any slicer rule was
changed: among the commits reachable from ``COMMIT``, every path ``…/projects/<slug>/<uuid>.jsonl``;
for each path the largest version whose blob the snapshot holds (it lacks blobs of 4 MiB and
more); kept when at least one main-chain Task/Agent call's prompt (first 200 characters) is the
text of a recorded sidechain's first line (a real spawn whose subagent was recorded). Written as
``<uuid>.jsonl``, pinned below by ``<commit>:<path>`` and SHA-256; the script refuses a file whose
bytes differ.

``--git-dir``: a clone holding ``COMMIT`` and its history (a bare one is fine); without it the
script clones ``https://github.com/SWORDIntel/claude-backups`` (blobs on demand). Needs network or
that clone; nothing in the test suite or CI runs it. The bench reads the result with
``python bench/slice_bench.py --split cc-legacy`` and skips the split with one line when absent.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from slice_fresh_set import extract, git  # this folder is on sys.path when run as a script

REPO = "https://github.com/SWORDIntel/claude-backups"
COMMIT = "8a99a265c43ba2db929767787f594b1343a37844"
SESSION = re.compile(r"(^|/)projects/[^/]+/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")
DEFAULT_OUT = Path.home() / ".cache/contextfork-bench/cc-legacy"

PINNED: dict[str, str] = {  # 15 sessions, 59 recorded spawns, 39 MB
    "00f0689ae1a5ea498499468802a2a430b9e498b0:.claude-home/.config/claude/projects/-home-ubuntu-Documents-Claude/0c45b0a6-b564-4223-9f39-bc05598a4122.jsonl":
        "509740f01c056048f368e7edea25c08b995ce5d62bfd0f3874033af2e5fd9ded",
    "8a99a265c43ba2db929767787f594b1343a37844:.claude/projects/-home-ubuntu-Documents-livecd-gen/155c3456-9cd0-4d8f-8db3-d0560ca1851c.jsonl":
        "0e1ae853ab3e241f8682c953e1f484eb9eeb0dd41b61186b836ef80475cd87ac",
    "5c594e4f372ce42fdf6b83fc1486e73018e047d7:config/projects/-home-ubuntu-Documents-livecd-gen/1b2c0332-e2dc-459f-88b9-1aad6e941e18.jsonl":
        "89b84165a8f97a333b4ddd29c3d2a2dd876cabc436d2d4b8ffda48747ee7a4cf",
    "00f0689ae1a5ea498499468802a2a430b9e498b0:.claude-home/.config/claude/projects/-home-ubuntu-Documents-Claude/54bc4295-98ad-4a3f-b5d9-e94ef3095a20.jsonl":
        "487e7b566e05e153b37a85657b2eb1602d0ed7e97ae9562da8c559ab96d33142",
    "6a405df94f110c8ea97e5c6ec6bd30a75e473d39:config/projects/-home-ubuntu-Downloads-claude-backups/595c4b49-fa25-4c07-9adc-d4ea82b26cff.jsonl":
        "e5977dd53d7eff787f4cad95cec8007f6551286b215f6b71d7998eb94980cb44",
    "23ed73d69c9f427eda973b570bdb1d9b5f53289f:config/projects/-home-ubuntu-Documents-livecd-gen/5b16cde2-87ae-4018-8114-70cccb10e320.jsonl":
        "31b0e1c0a7fc34b0a245b7989a7ef751eea7122c5ec45ae5231c527937f78b26",
    "a2d06622b6b3a89e013ddfe4d26b364f4d9a31a2:config/projects/-home-ubuntu-Documents-livecd-gen/77570c3a-1d27-4ced-a2e6-93692f2be9b9.jsonl":
        "d9eb770503a2559545df2ba42c032109e1884276611e52a84791d0c65820be14",
    "6a405df94f110c8ea97e5c6ec6bd30a75e473d39:config/projects/-home-ubuntu-Documents-claude-backups/86f87fad-a317-4a18-89b3-d1e33de12a4a.jsonl":
        "b63c01cb4fdf16bf3a66013e22d40ffb10e6f6fe8c9759365986324b6736e4e6",
    "9ad89219e323b52db5e0d976fa87cf2253158cb8:.claude-home/.config/claude/projects/-home-ubuntu-Documents-Claude/a1bb1115-ccee-45a2-a80f-7b36bba42a5d.jsonl":
        "c8419a31ef1afed62b98f414af9d0d1b1b3bb1303ce3417ea845e53d49d1aff3",
    "cf7e71c8f3d3af04d248230fe3330461a8b8d33c:config/projects/-home-ubuntu-Downloads-claude-backups/a3258e5b-94ea-4d29-bbdf-c38c532c404a.jsonl":
        "4b5e80b780d7ea386a7288cc71ba0c24652b486cb17028eb58593a0f875a583c",
    "00f0689ae1a5ea498499468802a2a430b9e498b0:.claude-home/.config/claude/projects/-home-ubuntu-Documents-Claude/bcd10ea8-524a-4c56-b637-10dd1f28f13b.jsonl":
        "edc5bbbbbc3fd25151e33cb05af038482ea682a84a3fde090890566f2042423e",
    "b7f5385da82019ce254b8200292feea189320a01:.claude-home/.config/claude/projects/-home-ubuntu-Documents-Claude/c2e483a2-8480-4674-b820-23d9a809aecd.jsonl":
        "e790ad85856cc8c1f7bf35f0c37ae329fcecea06a6b07f31047074cc4f4c18d1",
    "20b5507854c5945b3a52cb1a38e68879fb428222:config/projects/-home-ubuntu-Downloads-claude-backups/d9f70b92-1237-42ea-9356-1733bcc4b7e2.jsonl":
        "24bc62d25de8a3837708a4f21c741eee294424255380f99f29501bc854927048",
    "8a99a265c43ba2db929767787f594b1343a37844:.claude/projects/-home-ubuntu-Documents-livecd-gen/e1ffaf02-1289-4b61-ae2e-694bf373993b.jsonl":
        "9767225bc4444ab73edc9f0e90a48f0d90a67c81b981f5c7ccaa231c03b8381a",
    "00f0689ae1a5ea498499468802a2a430b9e498b0:.claude-home/.config/claude/projects/-home-ubuntu-Documents-Claude/fb4f7a6e-9d92-4292-8743-3a43a187bb1b.jsonl":
        "3aeaab9c4b09fe62c5a57371e1f075f9b5e217bc6028ce5494dd87c19d3b4850",
}  # fmt: skip


def recorded_spawns(data: bytes) -> int:
    """How many main-chain Task/Agent calls have a recorded sidechain with their prompt."""
    prompts: list[str] = []
    roots: set[str] = set()
    for raw in data.splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        content = msg.get("content")
        if obj.get("isSidechain"):
            if obj.get("type") == "user" and obj.get("parentUuid") is None and isinstance(content, str):
                roots.add(content[:200])
            continue
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") in ("Task", "Agent"):
                prompts.append(str((b.get("input") or {}).get("prompt"))[:200])
    return sum(p in roots for p in prompts)


def choose(git_dir: Path) -> list[str]:
    """``<commit>:<path>`` of each chosen session (module docstring), sorted by its file name."""
    best: dict[str, tuple[int, str, str]] = {}  # path -> (size, commit, blob)
    for commit in git(git_dir, "rev-list", COMMIT).decode().split():
        for line in git(git_dir, "ls-tree", "-r", "-l", commit).decode().splitlines():
            meta, path = line.split("\t", 1)
            _mode, kind, blob, size = meta.split()
            if kind != "blob" or not SESSION.search(path) or not size.isdigit():
                continue
            present = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "-e", blob],
                                     capture_output=True).returncode == 0
            if present and int(size) > best.get(path, (-1, "", ""))[0]:
                best[path] = (int(size), commit, blob)
    out = [f"{commit}:{path}" for path, (_s, commit, blob) in best.items()
           if recorded_spawns(git(git_dir, "cat-file", "blob", blob))]
    return sorted(out, key=dest)


def dest(spec: str) -> str:
    match = SESSION.search(spec.split(":", 1)[1])
    assert match is not None
    return f"{match.group(2)}.jsonl"


def main() -> int:
    return extract(REPO, COMMIT, PINNED, DEFAULT_OUT, choose, lambda spec: spec, dest, at_commit=False)


if __name__ == "__main__":
    sys.exit(main())
