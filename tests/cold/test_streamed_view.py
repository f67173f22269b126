"""recall_index.json is written row by row; its bytes must be exactly those of the whole view
dumped at once (sorted keys, indent 2, UTF-8 kept), whatever the terms and the store size."""

from __future__ import annotations

import json
from pathlib import Path

from contextfork.atomic import dump_json_bytes
from contextfork.cold import api
from contextfork.cold import index as idx
from contextfork.cold.layout import layout_at


def test_the_streamed_view_has_the_bytes_of_the_whole_view_dumped_at_once(store: Path) -> None:
    texts = ["Ünïcödé naïve café Straße İstanbul", "ı i İ I ß ss — 日本語 ✓", "zeta alpha 😀 emoji"]
    for i, text in enumerate(texts * 4, 1):
        api.fold_step(i, f"step {i}: {text}", text + f" file_{i % 3}.py", store_dir=store,
                      intents=[f"intent.{i % 2}"], refs=[i - 1] if i > 1 else None)  # fmt: skip
    layout = layout_at(store)
    with idx.opened(layout) as conn:
        streamed = b"".join(idx.ipcf_view_chunks(conn, layout, "p" * 64))
    assert dump_json_bytes(json.loads(streamed)) == streamed
    api.rebuild_index(store_dir=store)
    on_disk = layout.recall_index.read_bytes()
    assert dump_json_bytes(json.loads(on_disk)) == on_disk
    assert api.validate(store_dir=store).exit_code == 0


def test_an_empty_store_view_is_valid(store: Path) -> None:
    api.fold_step(1, "one", "x", store_dir=store)
    layout = layout_at(store)
    with idx.opened(layout) as conn:
        conn.execute("DELETE FROM nodes")
        conn.execute("DELETE FROM postings")
        conn.execute("DELETE FROM intents")
        streamed = b"".join(idx.ipcf_view_chunks(conn, layout, "p"))
    assert json.loads(streamed)["nodes"] == {} and dump_json_bytes(json.loads(streamed)) == streamed
