from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from contextfork import schemagen
from contextfork.resources import load_schema
from tests.helpers import Repo, cli

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


@pytest.mark.parametrize("name", sorted(schemagen.SCHEMAS))
def test_committed_schema_matches_its_pydantic_model(name: str) -> None:
    committed = (SCHEMAS / name).read_text(encoding="utf-8")
    assert committed == schemagen.render(name), f"run `python -m contextfork.schemagen` ({name})"


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda p: p.name)
def test_every_schema_is_a_valid_draft_2020_12_schema(path: Path) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_json_output_of_commands_matches_the_envelope_schema(repo: Repo) -> None:
    validator = jsonschema.Draft202012Validator(load_schema("envelope.schema.json"))
    for args in (
        ["export", "--json"],
        ["validate", "--json"],
        ["validate", "missing-id", "--json"],
    ):
        res = cli(*args, cwd=repo.path)
        validator.validate(res.json())
