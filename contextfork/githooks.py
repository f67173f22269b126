"""Old name of the git-hook runner, kept only for scripts already installed in users' repos.

Hooks installed before the ``contextfork.lifecycle`` package run
``python -m contextfork.githooks <hook>``; a ``--strict`` one would block every commit if this
module vanished. New installs call ``contextfork.lifecycle.githooks``; reinstalling
(``contextfork hooks install --git``) moves a repo to the new name.
"""

from __future__ import annotations

if __name__ == "__main__":
    import sys

    from contextfork.lifecycle.githooks import main

    sys.exit(main(sys.argv[1:]))
