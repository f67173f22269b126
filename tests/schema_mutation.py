"""Mutated documents for the differential tests of the compiled schema checker (``jsoncheck``)
against the reference ``jsonschema`` validator."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import jsonschema

from contextfork.resources import load_schema


def reference(schema: str, doc: Any) -> bool:
    """What the reference validator says of ``doc``."""
    return not list(jsonschema.Draft202012Validator(load_schema(schema)).iter_errors(doc))


def slots(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for k, v in items:
        out += slots(v, (*path, k))
    return out


def mutate(doc: Any, rng: random.Random, odd: list[Any], *, delete_below: float,
           new_key: Callable[[random.Random, Any], str]) -> Any:  # fmt: skip
    """A copy of ``doc`` with one value replaced by an odd one, one key deleted, one key added
    or one item appended, at a random place."""
    doc = copy.deepcopy(doc)
    path = rng.choice(slots(doc)[1:])
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key, what = path[-1], rng.random()
    if what < 0.6:
        parent[key] = rng.choice(odd)
    elif what < delete_below and isinstance(parent, dict):
        del parent[key]
    elif isinstance(parent, dict):
        value = rng.choice(odd)
        parent[new_key(rng, key)] = value
    else:
        parent.append(rng.choice(odd))
    return doc
