"""The checkpoint note: the text a commit carries in ``refs/notes/contextfork``.

Its own module because both the hook that writes it (``githooks``) and ``log`` that reads it
(``admin``) need the format, and ``githooks`` also calls ``admin`` to prune old checkpoints.
"""

from __future__ import annotations

NOTE_KEY = "contextfork-checkpoint"


def note_text(pending: dict[str, str]) -> str:
    """The note for one checkpoint: its id and the two hashes that let ``log`` verify it."""
    return (
        f"{NOTE_KEY}: {pending['package_id']}\n"
        f"manifest-sha256: {pending['manifest_sha256']}\n"
        f"package-sha256: {pending['package_sha256']}\n"
    )


def parse_note(text: str) -> dict[str, str]:
    """``key: value`` lines of a note; other lines (a user's own note text) are ignored."""
    fields = {}
    for line in text.splitlines():
        key, sep, val = line.partition(": ")
        if sep:
            fields[key.strip()] = val.strip()
    return fields
