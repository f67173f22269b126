"""A package's life after export: git hooks that checkpoint commits, list/show/clean, push/pull.

``githooks`` (install, the pre/post-commit runner), ``admin`` (list, show, clean, prune),
``sharing`` (push/pull through git refs) and ``models`` (the files written beside packages).
Importing the package imports none of them: the git-hook runner stays lean.
"""
