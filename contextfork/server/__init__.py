"""The command server: a warm process that forks a child per command (issue 15, speed).

A contextfork process spends most of its life importing (Typer, pydantic, jinja2, the secret
rules, the tokenizer): ~90 ms before `export` runs its first git command, more than the whole
git work it exists to capture. The server pays that once; each command is a ``fork()`` of it,
which gets the client's argv, working directory, environment, umask and its stdin/stdout/stderr
(the descriptors themselves, passed over a Unix socket), so a command served is the same
command run cold. Mercurial's chg is the model.

``client`` is what the console script runs first (stdlib only, a few ms); ``daemon`` is the
server. Design notes and the safety rules: docs/design/server.md.
"""
