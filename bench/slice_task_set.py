"""Extract the slice bench's held-out Claude Code set (real subagents) outside the repo.

    python bench/slice_task_set.py [--git-dir DIR] [--out ~/.cache/contextfork-bench/task-heldout]

The set tests the task-keyed slice (a real ``Task`` call's prompt, page-in against the parent's
cold store) on sessions none of the slicer's rules were chosen on. Rule, fixed before any of it
was scored: at commit ``COMMIT`` of marot/spotter (the same source as the dev session
``258c7280…`` in ``../shared/data/transcripts/claude-code``), every session
``test/fixtures/transcripts/<id>.jsonl`` that has a ``<id>/subagents/`` folder, minus the dev
one, and minus those whose main file the snapshot does not hold (``6c2214d7…``: 4 MiB or more),
each with all of its subagent files. Four sessions, five real Task calls (four ``Explore``, one
``general-purpose``), pinned below by SHA-256; the script refuses a file whose bytes differ.

``--git-dir``: a clone holding ``COMMIT`` (a bare one is fine); without it the script clones
``https://github.com/marot/spotter`` (blobs on demand) into a temporary directory. Needs network
or that clone; nothing in the test suite or CI runs it. The bench reads the result with
``python bench/slice_bench.py --split cc-heldout`` and skips the split with one line when absent.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from slice_fresh_set import extract, git  # this folder is on sys.path when run as a script

REPO = "https://github.com/marot/spotter"
COMMIT = "8cc42b0bd39d04e71e509d7d58e6782ab435329f"
PREFIX = "test/fixtures/transcripts/"
DEV_IDS = ("258c7280-ae70-4798-800f-63464d01a85d",)
DEFAULT_OUT = Path.home() / ".cache/contextfork-bench/task-heldout"

PINNED: dict[str, str] = {
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl": "b23ac886a348133a33bd6fcee20468404e178003e23bd30b55b950e46f108fc5",
    "4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl": "893a78c2d91cdd735fb78ec48c295aa846fd53381e59a62dc8b23de3c54dd24c",
    "4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl": "01f65142f7b52767a6c29db7470f77996b0fc2937113ea4e148ca5d41c52a34b",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": "1d923022ceceb62510b443358d0d7caa93bd668ef778500908aac990c7d25bc9",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-a7be2f0.jsonl": "3a0c9b1a58d91671f30f445c661902189ca94e8ba13f40349765f3c21b0b64a5",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-acompact-f46190.jsonl": "23507182dc6c8c03e00c7650b22ee8e1518c22b9a956971d67dbc7b90675f031",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": "099bffa9cbfee4eb43713a56bc9e53de46435729a1c185c14ad5cd2169f8700d",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl": "7ad8cd8708b877921eadefbd3bf21323cb000157029075459da40d9bdbb493b1",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl": "7a22d2e81b3f51bbd105ee19d49b2c50b8bed80003fee1c5aaef29734fb60702",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl": "f35acfadc7105e8430928fd18da81bfc80b6f309d6e37ab0b4eb77042ecbe423",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl": "55e4eb08bc5bfe5e89ba8345940dc6a821880ea7a4bbb088c2078f0dbf4dad2f",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-aa84377.jsonl": "54cf376e512d93f5763a671b8d72f4c7321cabc613710c87f8cb9b229b71ddac",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl": "5a7a5faa96b9cf4f0153279906debee22d063023653c8b9948ae7e2b63c7ed38",
}


def choose(entries: list[tuple[str, int | None]]) -> list[str]:
    """``entries``: (path under PREFIX, size or None when the snapshot lacks the blob)."""
    size = dict(entries)
    sessions = sorted({p.split("/")[0] for p in size if p.count("/") == 2 and "/subagents/" in p})
    out: list[str] = []
    for sid in sessions:
        if sid in DEV_IDS or not size.get(f"{sid}.jsonl"):
            continue
        out.append(f"{sid}.jsonl")
        out += sorted(p for p in size if p.startswith(f"{sid}/subagents/") and p.endswith(".jsonl"))
    return out


def _entries(git_dir: Path) -> list[tuple[str, int | None]]:
    entries: list[tuple[str, int | None]] = []
    for line in git(git_dir, "ls-tree", "-r", "-l", COMMIT, PREFIX).decode().splitlines():
        meta, path = line.split("\t", 1)
        blob, sz = meta.split()[2], meta.split()[3]
        present = sz.isdigit() and subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "-e", blob], capture_output=True).returncode == 0
        entries.append((path[len(PREFIX):], int(sz) if present else None))
    return entries


def main() -> int:
    return extract(REPO, COMMIT, PINNED, DEFAULT_OUT, lambda d: choose(_entries(d)),
                   lambda rel: f"{PREFIX}{rel}", lambda rel: rel)


if __name__ == "__main__":
    sys.exit(main())
