"""Every schema in schemas/ is checked by the one compiled checker (contextfork.jsoncheck).

``fold validate`` used to build a ``jsonschema`` validator per cold node (84 % of its time at
100k nodes, issue 27); it now shares the package path's checker. These tests hold that checker
to ``jsonschema``'s verdicts on real cold-store files and on seeded mutations of them.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from contextfork.cold import api
from contextfork.cold.scenario import REFERENCE_QUESTION
from contextfork.resources import data_dir, load_schema, validate_against_schema

ODD: list[Any] = [None, True, False, 0, -1, 1, 1.5, 2.0, 999999, 1000000, "", "x", "1.1",
                  "step_000001", "0" * 64, [], {}, ["a"], [0], {"k": 1}, "utf-8", "o200k_base"]  # fmt: skip


def _reference(schema: str, doc: Any) -> bool:
    return not list(jsonschema.Draft202012Validator(load_schema(schema)).iter_errors(doc))


def _slots(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for k, v in items:
        out += _slots(v, (*path, k))
    return out


def _mutate(doc: Any, rng: random.Random) -> Any:
    doc = copy.deepcopy(doc)
    path = rng.choice(_slots(doc)[1:])
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key, what = path[-1], rng.random()
    if what < 0.6:
        parent[key] = rng.choice(ODD)
    elif what < 0.75 and isinstance(parent, dict):
        del parent[key]
    elif isinstance(parent, dict):
        parent[rng.choice(["unexpected", "step_12", "step_000009"])] = rng.choice(ODD)
    else:
        parent.append(rng.choice(ODD))
    return doc


def _cold_files(store: Path) -> dict[str, list[Any]]:
    api.page_in(REFERENCE_QUESTION, store_dir=store)
    api.page_in("final review", store_dir=store)
    api.evict(8, store_dir=store)
    return {
        "cold-node.schema.json": [json.loads(p.read_bytes()) for p in sorted((store / "cold_nodes").iterdir())],
        "recall-index.schema.json": [json.loads((store / "recall_index.json").read_bytes())],
        "hydration-policy.schema.json": [json.loads((store / "hydration_policy.json").read_bytes())],
        "eviction-log.schema.json": [json.loads((store / "eviction_log.json").read_bytes())],
    }


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
        assert ours == _reference(schema, mutated), (n, schema, mutated)
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
    assert not _reference("cold-node.schema.json", node)
