"""Role slices of a parent session for subagents, and subagents folded back (docs/slice.md)."""
