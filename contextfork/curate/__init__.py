"""The agent's curation verbs (status, peek, expand, refold, pin, unpin, brief, reboundary,
unmark) and the durable, verified decisions renderers, ``fork`` and page-in honour."""
