"""packages list lists a damaged package instead of failing."""

from __future__ import annotations

import json

from contextfork.package.export import ExportOptions, export
from tests.helpers import Repo, cli


def test_packages_list_shows_a_package_whose_manifest_is_damaged(repo: Repo) -> None:
    ok = export(repo.path, ExportOptions(goal="ok")).package_id
    bad = export(repo.path, ExportOptions(goal="bad")).path
    for damage in ('{"files": [{"size": "big"}]}', '{"files": [1, {"size": null}]}',
                   '{"files": 5}'):  # fmt: skip
        (bad / "manifest.json").write_text(damage)
        meta = json.loads((bad / "session_metadata.json").read_text())
        meta["created_at"], meta["head"] = {"x": 1}, 12
        (bad / "session_metadata.json").write_text(json.dumps(meta))
        res = cli("packages", "list", "--json", cwd=repo.path)
        assert res.returncode == 0, res.stderr
        rows = {r["package_id"]: r for r in res.json()["data"]["packages"]}
        assert rows[ok]["readable"] and not rows[bad.name]["readable"]
        human = cli("packages", "list", cwd=repo.path)
        assert human.returncode == 0 and "DAMAGED" in human.stdout, human.stderr
