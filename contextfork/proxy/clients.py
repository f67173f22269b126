"""How each client is pointed at the proxy, and where it would have gone without it.

Claude Code reads ``ANTHROPIC_BASE_URL``. Codex 0.169's built-in ``openai`` provider cannot be
pointed elsewhere (it ignores ``OPENAI_BASE_URL`` and speaks a WebSocket transport first), so
for it this run gets a provider of its own, ``contextfork``, by ``-c`` overrides: the proxy's
URL, ``wire_api = "responses"``, the key from ``OPENAI_API_KEY`` (API-key users; a ChatGPT
login is not carried over); its upstream is ``OPENAI_BASE_URL`` when set, else OpenAI's API. A
config whose ``model_provider`` names a provider of its own (a gateway, Azure, a local server)
keeps it, with its ``base_url`` overridden for this run only (``-c model_providers.<id>.
base_url=…``). The user's files are never edited. The URL the client had becomes the proxy's
upstream for this client; a URL that is already one of our routes never is (no loop).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

ANTHROPIC = "https://api.anthropic.com"
OPENAI = "https://api.openai.com/v1"
PROVIDER = "contextfork"


def _ours(url: str) -> bool:
    from contextfork.proxy.server import host_is_loopback

    rest = url.split("://", 1)[-1]
    host, _, path = rest.partition("/")
    return host_is_loopback(host) and path.startswith("c/")


def codex_provider(env: dict[str, str]) -> tuple[str | None, str | None]:
    """(provider id, its base_url) when Codex's config names a provider of its own."""
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME", "~")).expanduser() / ".codex")
    try:
        config: dict[str, Any] = tomllib.loads((home / "config.toml").read_text("utf-8"))
    except (OSError, ValueError):
        return None, None
    pid = config.get("model_provider")
    providers = config.get("model_providers")
    if not isinstance(pid, str) or not isinstance(providers, dict):
        return None, None
    entry = providers.get(pid)
    url = entry.get("base_url") if isinstance(entry, dict) else None
    return pid, url if isinstance(url, str) else None


def point(harness: str, argv: list[str], env: dict[str, str],
          url: str) -> tuple[list[str], str]:
    """The client's argv and env (edited in place) pointed at ``url``; the upstream."""
    if harness == "codex":
        pid, base = codex_provider(env)
        if pid is not None and base is not None and pid != "openai":
            upstream = base if not _ours(base) else OPENAI
            return [argv[0], "-c", f"model_providers.{pid}.base_url={json.dumps(url)}",
                    *argv[1:]], upstream
        given = env.get("OPENAI_BASE_URL") or ""
        own = [f'model_provider="{PROVIDER}"', f'model_providers.{PROVIDER}.name="{PROVIDER}"',
               f"model_providers.{PROVIDER}.base_url={json.dumps(url)}",
               f'model_providers.{PROVIDER}.env_key="OPENAI_API_KEY"',
               f'model_providers.{PROVIDER}.wire_api="responses"']
        flags = [x for kv in own for x in ("-c", kv)]
        return [argv[0], *flags, *argv[1:]], given if given and not _ours(given) else OPENAI
    given = env.get("ANTHROPIC_BASE_URL") or ""
    env["ANTHROPIC_BASE_URL"] = url
    return argv, given if given and not _ours(given) else ANTHROPIC


__all__ = ["codex_provider", "point"]
