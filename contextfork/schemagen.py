"""Generate the JSON Schemas in ``schemas/`` from the pydantic models that own each format.

Run ``python -m contextfork.schemagen`` after changing a model; a test fails while the committed
schema and the model disagree. Areas register their models in ``SCHEMAS``.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

# file name -> (module, model class name, title)
SCHEMAS: dict[str, tuple[str, str, str]] = {
    "manifest.schema.json": ("contextfork.package.models", "Manifest", "contextfork package manifest.json"),
    "git-status.schema.json": ("contextfork.package.models", "GitStatusFile", "IPSF-1.2 git_status.json"),
    "untracked-manifest.schema.json": ("contextfork.package.models", "UntrackedManifest", "IPSF-1.2 untracked_manifest.json"),
    "session-metadata.schema.json": ("contextfork.package.models", "SessionMetadata", "IPSF-1.2 session_metadata.json"),
    "session-handoff.schema.json": ("contextfork.package.models", "Handoff", "IPSF-1.2 6-part handoff.json"),
    "handoff-input.schema.json": ("contextfork.package.models", "HandoffInput", "Agent-supplied handoff parts (--handoff FILE)"),
    "consumed-state.schema.json": ("contextfork.lifecycle_models", "ConsumedState", "Who resumed a package and when (<id>.state.json beside the package)"),
    "git-hooks-config.schema.json": ("contextfork.lifecycle_models", "GitHookConfig", "contextfork git hooks configuration (.contextfork/git-hooks.json)"),
}  # fmt: skip

BASE_ID = "https://contextfork.dev/schemas/"


def generate(name: str) -> dict[str, Any]:
    module, cls, title = SCHEMAS[name]
    model = getattr(importlib.import_module(module), cls)
    schema: dict[str, Any] = model.model_json_schema(mode="serialization")
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": BASE_ID + name,
        "title": title,
    }
    schema.pop("title", None)
    out.update(schema)
    return out


def render(name: str) -> str:
    return json.dumps(generate(name), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    from contextfork import atomic

    target = Path(__file__).resolve().parent.parent / "schemas"
    for name in SCHEMAS:
        atomic.write_text(target / name, render(name))
        print(f"wrote schemas/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
