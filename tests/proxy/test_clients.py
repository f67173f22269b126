"""How `contextfork run` points each client at the proxy, and what becomes its upstream."""

from __future__ import annotations

from pathlib import Path

from contextfork.proxy.clients import point

URL = "http://127.0.0.1:4000/c/abc"


def test_claude_gets_the_proxy_and_the_users_base_url_becomes_the_upstream() -> None:
    env = {"ANTHROPIC_BASE_URL": "https://gateway.example/anthropic"}

    argv, upstream = point("claude", ["claude", "-p", "x"], env, URL)

    assert argv == ["claude", "-p", "x"] and env["ANTHROPIC_BASE_URL"] == URL
    assert upstream == "https://gateway.example/anthropic"


def test_a_base_url_that_is_already_a_proxy_route_is_never_the_upstream() -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4999/c/old"}

    _, upstream = point("claude", ["claude"], env, URL)

    assert upstream == "https://api.anthropic.com"


def test_codex_with_its_own_provider_keeps_it_with_the_proxys_url(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'model_provider = "gw"\n[model_providers.gw]\nbase_url = "https://gw.example/v1"\n')
    env = {"CODEX_HOME": str(tmp_path)}

    argv, upstream = point("codex", ["codex", "exec", "hi"], env, URL)

    assert argv == ["codex", "-c", f'model_providers.gw.base_url="{URL}"', "exec", "hi"]
    assert upstream == "https://gw.example/v1" and "OPENAI_BASE_URL" not in env


def test_codex_with_the_built_in_provider_gets_one_of_its_own_for_this_run(
        tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path)}

    argv, upstream = point("codex", ["codex", "exec", "hi"], env, URL)

    assert argv[:3] == ["codex", "-c", 'model_provider="contextfork"'] and argv[-2:] == [
        "exec", "hi"]
    assert f'model_providers.contextfork.base_url="{URL}"' in argv
    assert 'model_providers.contextfork.wire_api="responses"' in argv
    assert upstream == "https://api.openai.com/v1"
