"""Domain side of ``contextfork policy show|init`` (the CLI module only parses arguments)."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork import atomic, layout
from contextfork.envelope import Result
from contextfork.errors import UsageError
from contextfork.telemetry.models import Policy
from contextfork.telemetry.status import load_policy


def _root(repo: Path | None, cwd: Path) -> Path:
    return layout.repo_root(repo if repo is not None else cwd)


def show(repo: Path | None, cwd: Path) -> Result:
    root = _root(repo, cwd)
    info = load_policy(root)
    data = info.model_dump(mode="json")
    text = f"# {info.source}\n" + json.dumps(data["policy"], indent=2) + "\n"
    return Result(command="policy show", data=data, text=text)


def init(repo: Path | None, cwd: Path, *, force: bool = False) -> Result:
    root = _root(repo, cwd)
    path = layout.policy_file(root)
    if path.exists() and not force:
        raise UsageError(f"{path} already exists", hint="pass --force to overwrite it")
    layout.exclude_state_dir(root)
    data = Policy().model_dump(mode="json")
    atomic.write_json(path, data)
    return Result(
        command="policy init", data={"path": str(path), "policy": data},
        text=f"wrote {path} (IPSF defaults)\n",
    )
