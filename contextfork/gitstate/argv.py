"""How contextfork calls git: pinned configuration, a clean environment, the export's argument
lists. Standard library ``os`` only, so the pre-commit hook can start git before it imports
anything else (``gitstate.early``); ``core``, ``porcelain`` and ``trees`` use the same lists.
"""

from __future__ import annotations

import os

# Pin configuration that changes output formats, whatever the user's gitconfig says.

PINNED = (
    "-c", "core.quotepath=false",
    "-c", "color.ui=false",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicprefix=false",
    "-c", "diff.external=",
    "-c", "core.safecrlf=false",
)  # fmt: skip

# Variables a hook inherits from the git process that runs it; they would redirect our calls.

REPO_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)

#: ``git status`` as export reads it (porcelain v2, NUL-separated, every untracked file).
STATUS = ("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
          "--ignore-submodules=none")  # fmt: skip

#: After ``diff [--cached] <base>``: an exact binary patch of the tracked paths.
DIFF_OPTIONS = ("--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv",
                "--no-renames", "--ignore-submodules=all", "--src-prefix=a/", "--dst-prefix=b/")  # fmt: skip


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in REPO_VARS}
    env.setdefault("LC_ALL", "C")
    env["GIT_TERMINAL_PROMPT"] = "0"
    if extra:
        env.update(extra)
    return env
