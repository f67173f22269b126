"""The IPCF-1.1 cold store: lossless folding of session steps with hash-verified paging.

Public API: ``contextfork.cold.api`` (fold_step, fold_session, page_in, recall, page_in_step,
evict, show, status, validate, rebuild_index). Page-in is one name in the code; ``fold scan``
and ``fold hydrate`` (the IPCF word) are its commands. Modules are split by idea; see each docstring.
"""
