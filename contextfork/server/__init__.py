"""The command server: a warm process that forks a child per command (issue 15, speed).

A contextfork process spends most of its life importing (Typer, pydantic, jinja2, the secret
rules, the tokenizer): ~90 ms before `export` runs its first git command, more than the whole
git work it exists to capture. The server pays that once; each command is a ``fork()`` of it,
which gets the client's argv, working directory, environment, umask and its stdin/stdout/stderr
(the descriptors themselves, passed over a Unix socket), so a command served is the same
command run cold. Mercurial's chg is the model.

It is off unless ``contextfork server enable`` (or ``CONTEXTFORK_SERVER=on``), and serves a
caller only in the server's own context (namespaces, limits, privileges, interpreter: issue 22),
as everything but argv, cwd, environment, umask and stdio is the server's.

``client`` is what the console script runs first (stdlib only, a few ms); ``context`` names what
shapes a process; ``contextfork.daemon`` (on top, beside ``entry``) is the server, ``child`` a
served command's process, ``peer`` the check of who connected; ``control`` the ``server`` verbs.
Design notes and the safety rules: docs/design/server.md.
"""
