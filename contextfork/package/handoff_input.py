"""Agent-supplied handoff parts (``--handoff FILE``, the MCP tool) checked against ``HandoffInput``.

Apart from ``package.handoff`` because it needs pydantic (``package.models``), and
``package.handoff`` runs inside git's pre-commit hook without it; ``models`` in turn uses the
handoff's version and placeholder wording, so the check cannot live in ``handoff`` either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contextfork.errors import NotFoundError, UsageError
from contextfork.inputfile import read_regular
from contextfork.package.models import HandoffInput

MAX_HANDOFF_BYTES = 16 * 1024 * 1024


def load_input(path: Path) -> dict[str, Any]:
    """Read --handoff FILE and check it against ``HandoffInput``."""
    try:
        raw = json.loads(read_regular(path, "handoff file", limit=MAX_HANDOFF_BYTES))
    except NotFoundError as exc:
        raise UsageError(f"handoff file not found: {path}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"handoff file {path} is not valid JSON: {exc}") from exc
    return parse_input(raw, str(path))


def parse_input(raw: Any, origin: str) -> dict[str, Any]:
    """Validate agent-supplied parts; returns them normalized (defaults filled), unset parts left out."""
    try:
        model = HandoffInput.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise UsageError(f"handoff {origin}: field {where}: {first['msg']}") from exc
    # Unset parts stay out (the machine seeds them), but inside a given part every optional
    # field is filled with its default: the templates read them all (an evidence entry without
    # its ``note`` once crashed the export).
    full = model.model_dump(mode="json")
    return {k: v for k, v in full.items() if k in model.model_fields_set}
