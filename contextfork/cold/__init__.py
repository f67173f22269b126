"""The IPCF-1.1 cold store: lossless folding of session steps with hash-verified paging.

Public API: ``contextfork.cold.api`` (fold_step, fold_session, scan, recall, hydrate, evict,
show, status, validate, rebuild_index). Modules are split by idea; see each docstring.
"""
