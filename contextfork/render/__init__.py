"""Render a shorter prompt from an unedited history (ReFold + pi-fold) and replay its bill.

Entry points: ``contextfork.render.api.render`` (pure, one step), ``make_renderer`` (incremental)
and ``contextfork.render.replay.replay`` (every step, every policy). Kept import-light: nothing
here loads the tokenizer until a replay asks for token sequences.
"""
