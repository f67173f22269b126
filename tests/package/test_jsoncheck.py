"""The package schema checker (contextfork.jsoncheck) against the reference: jsonschema.

validate no longer imports jsonschema or pydantic (issue 15, speed); these tests hold the
small checker to the same verdicts on real package files and on hundreds of seeded mutations
of them, and pin the two places where it is deliberately stricter (as the pydantic models are).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contextfork import jsoncheck
from contextfork.package.export import ExportOptions, export
from contextfork.package.validate import JSON_FILES
from contextfork.resources import validate_against_schema
from tests.helpers import Repo
from tests.schema_mutation import mutate, reference

SCHEMAS = {**JSON_FILES, "manifest.json": "manifest.schema.json"}
ODD_VALUES: list[Any] = [None, True, False, 0, -1, 1.5, 2.0, "", "x", "120000", [], {}, ["a"],
                         {"k": 1}, "0" * 64, "merge", "symlink", "cli", "file"]  # fmt: skip


def _mutate(doc: Any, rng: random.Random) -> Any:
    return mutate(doc, rng, ODD_VALUES, delete_below=0.8,
                  new_key=lambda _rng, key: "unexpected_" + str(key))


@pytest.fixture
def docs(exact_repo: Repo) -> dict[str, Any]:
    handoff = {"failed_approaches": [{"approach": "a", "barred_action": "b", "step": 3,
                                      "evidence": [{"kind": "file", "ref": "x"}]}]}  # fmt: skip
    pkg = export(exact_repo.path, ExportOptions(goal="g", handoff_input=handoff)).path
    return {rel: json.loads((pkg / rel).read_bytes()) for rel in SCHEMAS}


def test_schema_checker_accepts_every_file_of_a_real_package(docs: dict[str, Any]) -> None:
    for rel, schema in SCHEMAS.items():
        assert validate_against_schema(schema, docs[rel]) == [], rel


def test_schema_checker_agrees_with_jsonschema_on_mutated_package_files(
    docs: dict[str, Any],
) -> None:
    rng = random.Random(1511)
    verdicts = {True: 0, False: 0}
    for n in range(600):
        rel = rng.choice(sorted(SCHEMAS))
        mutated = _mutate(docs[rel], rng)
        ours = not validate_against_schema(SCHEMAS[rel], mutated)
        assert ours == reference(SCHEMAS[rel], mutated), (n, rel, mutated)
        verdicts[ours] += 1
    assert verdicts[True] > 50 and verdicts[False] > 200, verdicts  # both sides exercised


def test_schema_checker_refuses_a_sha256_with_a_trailing_newline(docs: dict[str, Any]) -> None:
    manifest = docs["manifest.json"]
    manifest["package_sha256"] += "\n"  # jsonschema (Python re) lets `$` match before it
    assert reference("manifest.schema.json", manifest)
    assert any("does not match" in m for m in validate_against_schema("manifest.schema.json", manifest))


def test_schema_checker_refuses_a_lone_surrogate(docs: dict[str, Any]) -> None:
    status = json.loads(json.dumps(docs["git_status.json"]).replace('"modified": [', '"modified": ["\\ud800", ', 1))
    assert any("Unicode" in m for m in validate_against_schema("git-status.schema.json", status))


def test_schema_checker_refuses_a_schema_it_cannot_check() -> None:
    with pytest.raises(jsoncheck.UnsupportedSchema):
        jsoncheck.Checker({"type": "object", "patternProperties": {"^a": {}}})
    with pytest.raises(jsoncheck.UnsupportedSchema):
        jsoncheck.Checker({"type": ["string", "date"]})
    with pytest.raises(jsoncheck.UnsupportedSchema):
        jsoncheck.Checker({"type": "string", "pattern": "^a$|^b$"})
    with pytest.raises(jsoncheck.UnsupportedSchema):
        jsoncheck.Checker({"$ref": "other.json#/x"})


def test_validate_imports_neither_pydantic_nor_jsonschema(exact_repo: Repo) -> None:
    export(exact_repo.path, ExportOptions())
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from contextfork.package.api import validate\n"
        f"r = validate(Path({str(exact_repo.path)!r}), None)\n"
        "assert r.exit_code == 0, r.problems\n"
        "heavy = ('pydantic', 'jsonschema', 'jinja2', 'typer')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert out.stdout.strip() == "[]", out.stdout
