"""How a failed approach is worded, shared by the jinja templates and the plain-text briefs.

Below ``resources`` (which registers ``FILTERS`` on the template environment) and below
``package.handoff`` and ``harness.briefs`` (which word the same approach in plain text), so
none of them imports another to share a regular expression. Standard library only.
"""

from __future__ import annotations

import re
from typing import Any

# A barred action may be written "Do not X", "Don't X", "Never X" or just "X"; every brief says
# "do not" itself, so the renderers strip the writer's own (and it is said once).
_DO_NOT = re.compile(r"^(?:\*\*)?(?:do\s+not|don['’]t|never)\b(?:\*\*)?[\s:,.-]*", re.IGNORECASE)


def barred(action: object) -> str:
    """The barred action as the words after "do not" (jinja filter ``barred``)."""
    text = _DO_NOT.sub("", str(action or "").strip(), count=1)
    if text[:1].isupper() and not text[1:2].isupper():  # "Raise it" → "raise it"; "NPM" stays
        text = text[0].lower() + text[1:]
    return text


def names_step(failure: object) -> bool:
    """True when the approach text already names its step (jinja filter ``names_step``), so a
    renderer does not add "(step N)" a second time."""
    if not isinstance(failure, dict) or failure.get("step") in (None, ""):
        return False
    step = re.escape(str(failure["step"]))
    return bool(re.search(rf"\bsteps?\s*#?{step}\b", str(failure.get("approach") or ""), re.I))


def step_suffix(failure: dict[str, Any]) -> str:
    """" (step N)" for a one-line rendering, or "" when there is none or the approach has it."""
    return f" (step {failure['step']})" if failure.get("step") and not names_step(failure) else ""


FILTERS = {"barred": barred, "names_step": names_step}
