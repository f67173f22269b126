"""The proxy's band comes from the repository's policy file; the environment beats the file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from contextfork.proxy import anthropic
from contextfork.proxy.adapt import adapt
from contextfork.proxy.conversation import Registry, proxy_policy
from tests.helpers import Repo, cli, make_repo
from tests.proxy.recorded import body_of
from tests.proxy.test_curation import _history

MODEL = "claude-sonnet-4-5"  # a 200k window


def _policy(repo: Repo, proxy: dict[str, object]) -> None:
    path = repo.path / ".contextfork" / "policy.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"policy_version": "1", "proxy": proxy}))


@pytest.fixture(autouse=True)
def _no_band_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CONTEXTFORK_PROXY_BUDGET", "CONTEXTFORK_PROXY_WINDOW_CAP",
                 "CONTEXTFORK_PROXY_POLICY"):
        monkeypatch.delenv(name, raising=False)


def test_the_band_is_a_tenth_of_the_capped_window_without_a_policy_file(repo: Repo) -> None:
    assert proxy_policy(MODEL, repo.path).budget_tokens == 20_000
    assert proxy_policy(MODEL, None).budget_tokens == 20_000


def test_the_policy_files_budget_tokens_set_the_band(repo: Repo) -> None:
    _policy(repo, {"budget_tokens": 1234})
    assert proxy_policy(MODEL, repo.path).budget_tokens == 1234


def test_the_policy_files_share_applies_to_its_window_cap(repo: Repo) -> None:
    _policy(repo, {"budget_share": 0.2, "window_cap": 100_000})
    assert proxy_policy(MODEL, repo.path).budget_tokens == 20_000


def test_the_environment_beats_the_policy_file(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    _policy(repo, {"budget_tokens": 1234})
    monkeypatch.setenv("CONTEXTFORK_PROXY_BUDGET", "777")
    assert proxy_policy(MODEL, repo.path).budget_tokens == 777


def test_an_invalid_band_keeps_the_default_and_policy_show_names_the_field(repo: Repo) -> None:
    _policy(repo, {"budget_share": 2})
    assert proxy_policy(MODEL, repo.path).budget_tokens == 20_000
    shown = cli("policy", "show", cwd=repo.path)
    assert shown.returncode == 2 and "proxy.budget_share" in shown.stderr, shown.stderr


def _sizes(root: Path) -> list[int | None]:
    """What the proxy forwards for 14 growing calls (None: the body as the client sent it)."""
    reg, api = Registry(), anthropic.api()
    headers = {"x-claude-code-session-id": "0b5f7a8e-1111-4222-8333-944455556666"}
    sizes: list[int | None] = []
    for n in range(2, 16):
        res = adapt(api, reg, root, headers, body_of(_history(n)), deadline=time.monotonic() + 60)
        sizes.append(len(res.body) if res.body is not None else None)
    return sizes


def test_the_proxy_keeps_the_policy_files_band(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFORK_PROXY_ADAPTIVE", "0")
    sent = {}
    for budget in (1500, 500_000):
        repo = make_repo(tmp_path / f"r{budget}")
        _policy(repo, {"budget_tokens": budget})
        sent[budget] = _sizes(repo.path)
    assert set(sent[500_000]) == {None}, "a band far above the prompt folds nothing"
    assert any(sent[1500]), "a band of 1,500 tokens never folded"
