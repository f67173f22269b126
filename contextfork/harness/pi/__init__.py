"""pi: the installed extension's long-lived worker and the live renderer it (and the proxy) use.

Nothing is imported here, so the proxy can take the live renderer without the worker.
"""
