"""The proxy's log: one JSON line per request, never a credential, a header or a body.

Requests of a project go to its ``.contextfork/logs/proxy.log``; the proxy's own events (start,
stop, requests without a project) to the log it was started with. A reason that quotes an
error is scrubbed like anything contextfork stores (``redact``). A log past its bound is
rotated once (``.1``), so a proxy running for weeks cannot fill the disk.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

MAX_LOG = 8 << 20


class ProxyLog:
    def __init__(self, own: Path | None) -> None:
        self.own = own
        self.roots: set[Path] = set()

    def path(self, root: Path | None) -> Path | None:
        if root is None:
            return self.own
        from contextfork.layout import ensure_state_dir, proxy_log

        try:
            if root not in self.roots:
                ensure_state_dir(root)  # .contextfork/ stays out of git
                self.roots.add(root)
            return proxy_log(root)
        except Exception:  # noqa: BLE001 - an unsafe state dir: the proxy's own log
            return self.own

    def write(self, root: Path | None, **record: Any) -> None:
        path = self.path(root)
        if path is None:
            return
        why = record.get("why")
        if isinstance(why, str):
            from contextfork.redact import redact_text

            record["why"] = redact_text(why)[0]
        line = json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), **record},
                          ensure_ascii=False, default=str)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.stat().st_size > MAX_LOG:
                os.replace(path, path.with_name(path.name + ".1"))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:
            pass  # logging must never break a request


__all__ = ["ProxyLog"]
