"""IPCF-1.1 interop: the normative projection, and the reference showcase as a peer computes it.

Independent data, not our own rules restated: the reference implementation's published facts
(its README shows step 137's identifiers; its conformance suite asserts CONF-11 NFC/NFD
equality, CONF-13's Unicode identifiers and the showcase's selection order [342, 137, 447]).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from contextfork.cold import api
from contextfork.cold.projection import PROJECTION_V2, normative_terms, projection_v2
from contextfork.hashing import canonical_sha256, sha256_bytes
from tests.helpers import Repo

# The reference's 500-turn showcase: (step id, summary, payload), as its demo folds them.
SHOWCASE = [
    (37, "PostgreSQL configured on Port 5433", "$ docker compose up -d postgres\nPostgreSQL running on port 5433"),
    (91, "PostgreSQL switched to Port 5434 (conflict resolution)", "$ psql -p 5434 -U admin\nConflict resolved on port 5434"),
    (137, "PostgreSQL port 5434 reverted back to Port 5433", "$ sed -i 's/5434/5433/' config.env\nPostgreSQL Port 5433 restored"),
    (200, "Authentication middleware refactored; JWT secret rotated", "JWT secret updated in auth/middleware.py"),
    (318, "Migration V12 applied to production database", "$ python manage.py migrate V12__TenantBilling.sql\nMigration V12 applied"),
    (342, "Migration V12 rolled back due to deadlocks", "Deadlock detected in billing table; rolled back V12"),
    (447, "Migration V12 patched and re-applied successfully", "Patched V12__TenantBilling.sql with row-level locks; migration complete"),
    (499, "Final review: all services healthy, Port 5433 confirmed", "All health checks passing on port 5433"),
]  # fmt: skip
SHOWCASE_PROMPT = "What port are we using for PostgreSQL, and which migration applied the billing table?"
DEFAULT_IPCF_POLICY = {
    "policy_version": "1.1", "max_rehydration_tokens_per_call": 3000,
    "max_rehydration_tokens_per_turn": 3500, "scope": "single_turn",
    "eviction_trigger": "after_response", "integrity_verification": True,
}  # fmt: skip


def _fold_showcase(repo: Repo) -> Path:
    for step, summary, payload in SHOWCASE:
        api.fold_step(step, summary, payload.encode(), repo=repo.path, session="showcase")
    return repo.path / ".contextfork" / "cold" / "showcase"


def _node(store: Path, step: int) -> dict[str, object]:
    data: dict[str, object] = json.loads((store / "cold_nodes" / f"step_{step:06d}.json").read_bytes())
    return data


def test_conf11_projection_is_exactly_the_eight_normative_fields(repo: Repo) -> None:
    node = _node(_fold_showcase(repo), 137)
    proj = projection_v2(node)
    assert list(proj) == ["projection_version", "step_id", "normalized_content", "identifiers",
                          "files", "commands", "errors", "folding_policy_hash"]  # fmt: skip
    assert node["projection_version"] == PROJECTION_V2
    # canonical JSON: sorted keys, "," and ":" separators, ensure_ascii false
    raw = json.dumps(proj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert node["projection_sha256"] == sha256_bytes(raw) == canonical_sha256(proj)


def test_conf11_default_policy_hashes_like_the_reference_default(repo: Repo) -> None:
    node = _node(_fold_showcase(repo), 37)
    expected = sha256_bytes(json.dumps(DEFAULT_IPCF_POLICY, sort_keys=True, separators=(",", ":"),
                                       ensure_ascii=False).encode())  # fmt: skip
    assert node["policy_sha256"] == expected


def test_conf02_payload_sha256_is_the_raw_utf8_payload(repo: Repo) -> None:
    store = _fold_showcase(repo)
    for step, _, payload in SHOWCASE:
        assert _node(store, step)["payload_sha256"] == sha256_bytes(payload.encode("utf-8"))


def test_identifiers_of_step_137_hold_the_reference_readme_excerpt(repo: Repo) -> None:
    """The README's excerpt omits "back", which the reference code (summary + payload, no such
    stopword) does extract; the excerpt is older than the code, so it is checked as a subset."""
    node = _node(_fold_showcase(repo), 137)
    readme = ["5433", "5434", "config", "env", "port", "postgresql", "restored", "reverted", "sed"]
    assert set(readme) <= set(node["identifiers"])
    assert set(node["identifiers"]) - set(readme) == {"back"}
    assert node["commands"] == ["sed -i 's/5434/5433/' config.env"]


def test_conf11_nfc_and_nfd_give_one_projection(repo: Repo) -> None:
    text = "café port 5433 connection"
    a = api.fold_step(201, "Café service configuration", text.encode(), repo=repo.path, session="nfc")
    b = api.fold_step(201, unicodedata.normalize("NFD", "Café service configuration"),
                      unicodedata.normalize("NFD", text).encode(), repo=repo.path, session="nfd")  # fmt: skip
    na = _node(repo.path / ".contextfork" / "cold" / "nfc", 201)
    nb = _node(repo.path / ".contextfork" / "cold" / "nfd", 201)
    assert na["identifiers"] == nb["identifiers"]
    assert na["projection_sha256"] == nb["projection_sha256"]
    assert a.exit_code == b.exit_code == 0


def test_conf13_unicode_identifiers_as_the_reference_suite_asserts() -> None:
    terms = normative_terms(
        "İstanbul için veri merkezi sipariş_tablosu migrasyonu neden yapıldı?",
        "def __init__(self):\n    self._private_var = 'aktif'\n"
        "Veritabanı: sipariş_tablosu güncellendi. Türkçe karakterler: çığöşü.",
    )["identifiers"]
    for want in ("__init__", "_private_var", "sipariş_tablosu", "veritabani", "istanbul"):
        assert want in terms
    for unwanted in ("i̇stanbul", "icin", "için", "neden"):
        assert unwanted not in terms


@pytest.mark.parametrize("via", ["api", "cli"])
def test_conf13_showcase_hydrates_342_137_447_in_selection_order(repo: Repo, via: str) -> None:
    from tests.helpers import run_cli

    _fold_showcase(repo)
    if via == "api":
        data = api.page_in(SHOWCASE_PROMPT, repo=repo.path, session="showcase").data
    else:
        res = run_cli("fold", "scan", SHOWCASE_PROMPT, "--session", "showcase", "--json",
                      cwd=repo.path)  # fmt: skip
        assert res.returncode == 0, res.stderr
        data = res.json()["data"]
    assert [int(p["step_id"]) for p in data["selected"]] == [342, 137, 447]


def test_conf04_recall_full_tier_is_chronological_latest_first(repo: Repo) -> None:
    """The reference's CONF-04: for "PostgreSQL port", 137 (latest) then 91 then 37; the
    single-term step 499 follows in a lower tier. bm25 must not reorder the full tier."""
    store = _fold_showcase(repo)
    hits = api.recall("PostgreSQL port", store_dir=store).data["hits"]
    assert [h["step_id"] for h in hits][:3] == [137, 91, 37]
    assert [h["tier"] for h in hits][:3] == ["full"] * 3
    assert hits[0]["label"] == "latest" and {h["label"] for h in hits[1:3]} == {"historical"}
    later = [h["step_id"] for h in hits[3:]]
    assert 499 in later and all(h["tier"] != "full" for h in hits[3:])
