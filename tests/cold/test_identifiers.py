"""Identifier extraction and the safe prefix rules (what matches and what does not)."""

from __future__ import annotations

from pathlib import Path

from contextfork.cold import api
from contextfork.cold.identifiers import extract, normalize, prompt_terms, step_refs


def test_turkish_dotted_and_dotless_i_fold_together() -> None:
    assert normalize("İSTANBUL") == normalize("ıstanbul") == normalize("Istanbul") == "istanbul"


def test_nfc_and_casefold() -> None:
    assert normalize("Cafe\u0301") == normalize("CAFÉ") == "café"
    assert normalize("Straße") == "strasse"


def test_files_keep_full_extensions_and_commands_errors_are_kinds() -> None:
    ex = extract("edit package.json, src/App.tsx and setup.cfg; run `npm run build`; TypeError: x; ECONNREFUSED")
    assert {"package.json", "src/app.tsx", "app.tsx", "setup.cfg"} <= set(ex.files)
    assert "npm run build" in ex.commands
    assert {"typeerror", "econnrefused"} <= set(ex.errors)
    assert "e.g" not in ex.files


def test_stopwords_dropped_from_prompt_terms() -> None:
    assert prompt_terms("What is the port that we are using?") == ["port"]


def test_step_refs_found_in_text() -> None:
    assert step_refs("after the rollback in step 4 and #7; steps 2") == [2, 4, 7]


def _scan_ids(store: Path, prompt: str) -> list[int]:
    return [p["step_id"] for p in api.page_in(prompt, store_dir=store).data["selected"]]


def test_prefix_matching_postgres_postgresql_both_ways(store: Path) -> None:
    api.fold_step(1, "configured postgresql", "a", store_dir=store)
    api.fold_step(2, "postgres container restarted", "b", store_dir=store)
    assert 1 in _scan_ids(store, "postgres") or 2 in _scan_ids(store, "postgres")
    hits = {h["step_id"] for h in api.recall("postgres", store_dir=store).data["hits"]}
    assert hits == {1, 2}
    hits = {h["step_id"] for h in api.recall("postgresql", store_dir=store).data["hits"]}
    assert hits == {1, 2}


def test_prefix_matching_is_not_applied_to_short_words_numbers_versions_files(store: Path) -> None:
    api.fold_step(1, "portal redesign", "a", store_dir=store)
    api.fold_step(2, "listening on 54330", "b", store_dir=store)
    api.fold_step(3, "migration v123", "c", store_dir=store)
    api.fold_step(4, "edited config.yaml", "d", store_dir=store)
    api.fold_step(5, "configuration overhaul", "e", store_dir=store)
    assert _scan_ids(store, "port") == []  # 4 letters: exact only, never "portal"
    assert _scan_ids(store, "5433") == []
    assert _scan_ids(store, "v12") == []
    assert _scan_ids(store, "config.yml") == []
    assert 5 not in _scan_ids(store, "config")  # "configuration" is 7 letters longer: too far
