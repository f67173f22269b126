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


def test_a_real_curation_file_matches_its_schema_and_model(repo: Repo, tmp_path: Path) -> None:
    from contextfork.cold.api import fold_session
    from contextfork.cold.decisions import decisions_path
    from contextfork.curate.api import run_verb
    from contextfork.curate.models import CurationFile
    from tests.curate.conftest import synthetic_records
    from tests.transcript.builders import write_jsonl

    t = write_jsonl(tmp_path / "s1.jsonl", synthetic_records())
    fold_session(t, repo=repo.path, session="s1")
    run_verb(repo.path, "s1", "pin", {"steps": [2, 3]})
    run_verb(repo.path, "s1", "expand", {"step": 4})
    run_verb(repo.path, "s1", "brief", {"step": 5, "text": "five: fine"})
    run_verb(repo.path, "s1", "reboundary", {"step": 6})
    doc = json.loads(decisions_path(repo.path, "s1").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(load_schema("curation-decisions.schema.json")).validate(doc)
    assert CurationFile.model_validate(doc).model_dump(mode="json") == doc
    doc["pinned"] = "not a list"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, load_schema("curation-decisions.schema.json"))
