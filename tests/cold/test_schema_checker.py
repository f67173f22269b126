"""Every schema in schemas/ is checked by the one compiled checker (contextfork.jsoncheck).

``fold validate`` used to build a ``jsonschema`` validator per cold node (84 % of its time at
100k nodes, issue 27); it now shares the package path's checker. These tests hold that checker
to ``jsonschema``'s verdicts on real cold-store files and on seeded mutations of them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from contextfork.resources import data_dir, validate_against_schema
from tests.cold.test_schemas_and_scenario import _real_files
from tests.schema_mutation import mutate, reference

ODD: list[Any] = [None, True, False, 0, -1, 1, 1.5, 2.0, 999999, 1000000, "", "x", "1.1",
                  "step_000001", "0" * 64, [], {}, ["a"], [0], {"k": 1}, "utf-8", "o200k_base"]  # fmt: skip


def _mutate(doc: Any, rng: random.Random) -> Any:
    return mutate(doc, rng, ODD, delete_below=0.75,
                  new_key=lambda r, _key: r.choice(["unexpected", "step_12", "step_000009"]))


def _cold_files(store: Path) -> dict[str, list[Any]]:
    return _real_files(store)


def test_every_schema_we_ship_compiles_in_the_checker() -> None:
    names = sorted(p.name for p in data_dir("schemas").glob("*.schema.json"))
    assert len(names) >= 20
    for name in names:
        assert validate_against_schema(name, None) != [], name  # compiled, and null is refused


def test_checker_agrees_with_jsonschema_on_mutated_cold_files(scenario_store: Path) -> None:
    files = _cold_files(scenario_store)
    rng = random.Random(2705)
    verdicts = {True: 0, False: 0}
    for n in range(500):
        schema = rng.choice(sorted(files))
        mutated = _mutate(rng.choice(files[schema]), rng)
        ours = not validate_against_schema(schema, mutated)
        assert ours == reference(schema, mutated), (n, schema, mutated)
        verdicts[ours] += 1
    assert verdicts[True] > 40 and verdicts[False] > 200, verdicts


@pytest.mark.parametrize(("field", "value"), [("ipcf_version", "1.0"), ("node_version", 2),
                                              ("node_version", True), ("step_id", 1000000),
                                              ("tokenizer", "cl100k_base")])  # fmt: skip
def test_a_node_with_a_wrong_constant_or_bound_is_refused(scenario_store: Path, field: str, value: Any) -> None:
    node = json.loads(next((scenario_store / "cold_nodes").iterdir()).read_bytes())
    assert validate_against_schema("cold-node.schema.json", node) == []
    node[field] = value
    assert validate_against_schema("cold-node.schema.json", node), (field, value)
    assert not reference("cold-node.schema.json", node)
