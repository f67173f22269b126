"""How a failed approach is worded, shared by the jinja templates and the plain-text briefs.

Below ``resources`` (which registers ``FILTERS`` on the template environment) and below
``package.handoff`` and ``harness.briefs`` (which word the same approach in plain text), so
none of them imports another to share a regular expression. Standard library only.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
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


_PLACEHOLDER = re.compile(r"\[\[unfilled:[^\]]*\]\]")
NOT_RECORDED = "not recorded"


def recorded(value: object) -> str:
    """A part's text, or "not recorded" where it is still a placeholder (jinja filter
    ``recorded``): handoff.json keeps the placeholder for ``validate``, a reader never sees it."""
    text = str(value if value is not None else "")
    return NOT_RECORDED if _PLACEHOLDER.search(text) else text


def is_recorded(value: object) -> bool:
    return recorded(value) != NOT_RECORDED


def provenance(prov: object) -> str:
    """Where a part came from, in a few words (jinja filter ``provenance``)."""
    if not isinstance(prov, dict):
        return ""
    src = prov.get("source")
    if src == "model":
        return "written by the model"
    if src == "harness-summary":
        secs = ", ".join(f'"{s}"' for s in prov.get("sections") or [])
        return (f"from {prov.get('harness') or 'the harness'}'s compaction summary at step "
                f"{prov.get('step')}" + (f" ({secs})" if secs else ""))
    if src == "machine-seeded":
        return "machine-seeded from the transcript"
    return NOT_RECORDED if src == "not recorded" else ""


def claim_mark(claim: object) -> str:
    """" — verified: …" / " — unverified: …" after a cited item (jinja filter ``claim_mark``)."""
    if not isinstance(claim, dict):
        return ""
    return f" — {claim.get('status')}: {claim.get('detail')}"


FILTERS = {"barred": barred, "names_step": names_step, "recorded": recorded,
           "is_recorded": is_recorded, "provenance": provenance, "claim_mark": claim_mark}
