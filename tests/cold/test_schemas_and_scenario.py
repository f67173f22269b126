"""Models vs schemas on real output, and the SPEC §6 reference scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.cold import api
from contextfork.cold.models import MODEL_FOR_FILE
from contextfork.cold.scenario import EXPECTED_STEPS, REFERENCE_QUESTION, SUPERSEDED_PORT_STEPS
from contextfork.resources import validate_against_schema


def _real_files(store: Path) -> dict[str, list[object]]:
    api.page_in(REFERENCE_QUESTION, store_dir=store)
    api.page_in("final review", store_dir=store)  # produces eviction log entries
    api.evict(8, store_dir=store)
    return {
        "cold-node.schema.json": [json.loads(p.read_bytes()) for p in sorted((store / "cold_nodes").iterdir())],
        "recall-index.schema.json": [json.loads((store / "recall_index.json").read_bytes())],
        "hydration-policy.schema.json": [json.loads((store / "hydration_policy.json").read_bytes())],
        "eviction-log.schema.json": [json.loads((store / "eviction_log.json").read_bytes())],
    }


@pytest.mark.parametrize("schema", sorted(MODEL_FOR_FILE))
def test_models_and_schemas_agree_on_real_output(scenario_store: Path, schema: str) -> None:
    files = _real_files(scenario_store)[schema]
    assert files
    model = MODEL_FOR_FILE[schema]
    for data in files:
        assert validate_against_schema(schema, data) == []
        assert model.model_validate(data).model_dump(mode="json") == data
    broken = dict(files[0])  # type: ignore[call-overload]
    broken["unexpected_field"] = 1
    assert validate_against_schema(schema, broken)
    with pytest.raises(ValueError):
        model.model_validate(broken)


def test_reference_scenario_hydrates_newest_port_reapplied_migration_and_rollback(scenario_store: Path) -> None:
    sel = api.page_in(REFERENCE_QUESTION, store_dir=scenario_store).data
    picked = [p["step_id"] for p in sel["selected"]]
    assert tuple(picked) == EXPECTED_STEPS
    assert not set(picked) & set(SUPERSEDED_PORT_STEPS)
    assert '<cold-step step="1"' not in sel["context"] and '<cold-step step="2"' not in sel["context"]
    assert {d["step_id"] for d in sel["dropped"]}.isdisjoint(SUPERSEDED_PORT_STEPS)
    assert sel["tokens"] <= 3000
    assert api.validate(store_dir=scenario_store).exit_code == 0


def test_reference_scenario_is_deterministic_in_process(tmp_path: Path) -> None:
    from contextfork.cold.scenario import build_reference_scenario

    a = build_reference_scenario(tmp_path / "a" / "ref")
    b = build_reference_scenario(tmp_path / "b" / "ref")
    assert [x["projection_sha256"] for x in a] == [y["projection_sha256"] for y in b]
    assert [x["artifact_sha256"] for x in a] == [y["artifact_sha256"] for y in b]
