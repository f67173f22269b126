"""Fixtures of the end-to-end suite: the real clients, the mocks, and one rig per client.

Each test gets a real git repository, a temporary HOME and client config directory, its own
loopback mock of the model API, and the pinned client from the npm cache. Nothing touches the
real home, the network (beyond the one-time ``npm install``) or a real model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.clients import install_clients, node_missing
from tests.e2e.mock_anthropic import MockAnthropic
from tests.e2e.mock_openai import MockOpenAI
from tests.e2e.rigs import ClaudeRig, CodexRig


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def client_prefix() -> Path:
    """The npm prefix holding the pinned clients (installed on first use, then reused)."""
    reason = node_missing()
    if reason:
        pytest.skip(reason)
    return install_clients()


@pytest.fixture
def anthropic() -> Iterator[MockAnthropic]:
    with MockAnthropic() as mock:
        yield mock
    assert not mock.errors, f"the mock's responder failed: {mock.errors}"


@pytest.fixture
def openai() -> Iterator[MockOpenAI]:
    with MockOpenAI() as mock:
        yield mock
    assert not mock.errors, f"the mock's responder failed: {mock.errors}"


@pytest.fixture
def claude(tmp_path: Path, client_prefix: Path, anthropic: MockAnthropic) -> ClaudeRig:
    return ClaudeRig.create(tmp_path, client_prefix, anthropic)


@pytest.fixture
def codex(tmp_path: Path, client_prefix: Path, openai: MockOpenAI) -> CodexRig:
    return CodexRig.create(tmp_path, client_prefix, openai)
