"""What an installed pre-commit hook runs: ``python -m contextfork.lifecycle.gitrun <hook>``.

A commit's checkpoint is an export, and most of a cold export is start-up, so the hook asks the
warm command server first (``contextfork git-hook``, contextfork/server), and runs the hook in
this process only when no server answers. Stdlib only until then, like the console script;
then a pre-commit starts its first git questions before importing the rest (``gitstate.early``).
Hooks installed before this module call ``contextfork.lifecycle.githooks`` (or the older
``contextfork.githooks``) directly, which still works; reinstalling moves them here.
"""

from __future__ import annotations

if __name__ == "__main__":
    import sys

    from contextfork.server.client import serve

    code = serve(["git-hook", *sys.argv[1:]])
    if code is None:
        early = None
        if sys.argv[1:2] == ["pre-commit"]:  # git starts before the imports (gitstate.early)
            from contextfork.gitstate.early import start_reads

            early = start_reads()
        from contextfork.lifecycle.githooks import main

        code = main(sys.argv[1:], early)
        # Nothing is left to clean up (files closed and on disk, git processes reaped, the
        # prune's remover detached): skip the interpreter's teardown of ~150 modules, ~9 ms of
        # every commit.
        sys.stdout.flush()
        sys.stderr.flush()
        import os

        os._exit(code)
    sys.exit(code)
