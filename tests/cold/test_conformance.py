"""IPCF-1.1 conformance: one test (or more) per requirement, named after it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextfork.cold import api
from contextfork.cold.layout import layout_at
from contextfork.cold.scenario import REFERENCE_QUESTION
from contextfork.cold.store import StepConflict
from contextfork.errors import IntegrityError, NotFoundError, UsageError
from contextfork.hashing import sha256_bytes
from tests.helpers import make_repo


def _node_file(store: Path, step: int) -> Path:
    return store / "cold_nodes" / f"step_{step:06d}.json"


def test_conf01_lossless_storage_of_text_unicode_crlf_and_binary(store: Path) -> None:
    text = "línea uno\r\nzweite Zeile\t\u00e9\u0301 🙂\n\x00tail"
    binary = bytes(range(256)) * 3
    api.fold_step(1, "text step", text, store_dir=store)
    api.fold_step(2, "binary step", binary, store_dir=store)
    node1 = api.show(1, store_dir=store).data["node"]
    assert node1["content"].encode("utf-8") == text.encode("utf-8")
    node2 = api.show(2, store_dir=store).data["node"]
    assert node2["content_encoding"] == "base64"
    import base64

    assert base64.b64decode(node2["content"]) == binary
    assert api.page_in_step(1, store_dir=store).data["content"] == text


def test_conf02_sha256_round_trip_of_payload(store: Path) -> None:
    payload = "def f():\n    return 42\n" * 10
    res = api.fold_step(1, "code", payload, store_dir=store)
    assert res.data["payload_sha256"] == sha256_bytes(payload.encode())
    hyd = api.page_in_step(1, store_dir=store).data
    assert hyd["verified"] is True
    assert sha256_bytes(hyd["content"].encode()) == hyd["payload_sha256"] == res.data["payload_sha256"]


def test_conf03_deterministic_indexing_independent_of_fold_order(tmp_path: Path) -> None:
    from contextfork.cold.scenario import TURNS

    a = tmp_path / "a" / "same"
    b = tmp_path / "b" / "same"
    order_b = [5, 2, 8, 1, 7, 3, 6, 4]
    for i, t in enumerate(TURNS, 1):
        api.fold_step(i, t["summary"], t["payload"], store_dir=a, intents=t["intents"])
    for i in order_b:
        t = TURNS[i - 1]
        api.fold_step(i, t["summary"], t["payload"], store_dir=b, intents=t["intents"])
    assert (a / "recall_index.json").read_bytes() == (b / "recall_index.json").read_bytes()
    for i in range(1, 9):
        assert _node_file(a, i).read_bytes() == _node_file(b, i).read_bytes()
    api.rebuild_index(store_dir=a)
    assert (a / "recall_index.json").read_bytes() == (b / "recall_index.json").read_bytes()


def test_conf04_temporal_disambiguation_labels_latest_and_superseded(scenario_store: Path) -> None:
    hits = api.recall("PostgreSQL port", store_dir=scenario_store).data["hits"]
    labels = {h["step_id"]: h["label"] for h in hits}
    assert labels[5] == "latest"
    assert labels[1] == labels[2] == "superseded"
    assert hits[0]["step_id"] == 5  # newest first within a tier
    assert {h["superseded_by"] for h in hits if h["label"] == "superseded"} == {5}


def test_conf04_historical_and_related_labels(store: Path) -> None:
    api.fold_step(1, "tuned the cache eviction", "x", store_dir=store)
    api.fold_step(2, "tuned the cache eviction again", "y", store_dir=store)
    api.fold_step(3, "postgresql settings", "z", store_dir=store)
    hits = {h["step_id"]: h for h in api.recall("cache eviction postgres", store_dir=store).data["hits"]}
    assert hits[2]["label"] == "latest" and hits[1]["label"] == "historical"
    assert hits[3]["label"] == "related"  # matched only through the postgres → postgresql prefix
    assert hits[1]["tier"] == "partial"


def test_conf05_exact_retrieval_of_files_with_full_extension(store: Path) -> None:
    api.fold_step(1, "bumped react in package.json", "diff", store_dir=store)
    api.fold_step(2, "regenerated package-lock.json", "lock", store_dir=store)
    api.fold_step(3, "wrote the package overview", "doc", store_dir=store)
    sel = api.page_in("what changed in package.json?", store_dir=store).data
    assert [p["step_id"] for p in sel["selected"]] == [1]
    assert sel["terms"][0] == "package.json"


def test_conf05_exact_retrieval_of_error_names_and_numbers(store: Path) -> None:
    api.fold_step(1, "port 5433 is busy", "a", store_dir=store)
    api.fold_step(2, "port 54330 is free", "b", store_dir=store)
    api.fold_step(3, "KeyError in loader.py", "c", store_dir=store)
    assert [p["step_id"] for p in api.page_in("5433", store_dir=store).data["selected"]] == [1]
    assert [p["step_id"] for p in api.page_in("KeyError", store_dir=store).data["selected"]] == [3]


def test_conf06_bounded_rehydration_per_call(store: Path) -> None:
    big = "token " * 5000
    api.fold_step(1, "huge output of pytest", big, store_dir=store)
    sel = api.page_in("pytest output", store_dir=store).data
    assert sel["tokens"] <= 3000
    assert sel["selected"][0]["mode"] == "summary"  # content did not fit, its own summary did
    hyd = api.page_in_step(1, store_dir=store).data
    assert hyd["truncated"] is True and hyd["tokens"] <= 3000


def test_conf06_bounded_rehydration_per_turn(store: Path) -> None:
    api.fold_step(1, "alpha", "word " * 2500, store_dir=store)
    api.fold_step(2, "beta", "word " * 2500, store_dir=store)
    api.fold_step(3, "gamma", "word " * 2500, store_dir=store)
    api.page_in("nothing relevant", store_dir=store)  # opens a fresh turn
    first = api.page_in_step(1, store_dir=store).data
    second = api.page_in_step(2, store_dir=store).data
    assert first["tokens"] + second["tokens"] <= 3500
    assert second["truncated"] is True
    with pytest.raises(Exception, match="budget") as exc:
        api.page_in_step(3, store_dir=store)
    assert getattr(exc.value, "exit_code", None) == 1


def test_conf07_single_turn_eviction(scenario_store: Path) -> None:
    first = api.page_in(REFERENCE_QUESTION, store_dir=scenario_store).data
    assert {p["step_id"] for p in first["selected"]} == {4, 5, 7}
    ev = api.evict(5, store_dir=scenario_store).data
    assert ev["status"] == "evicted" and sorted(ev["still_hydrated"]) == [4, 7]
    again = api.evict(5, store_dir=scenario_store).data
    assert again["status"] == "not_hydrated"
    api.page_in("final review", store_dir=scenario_store)  # next turn evicts the rest
    log = json.loads((scenario_store / "eviction_log.json").read_bytes())
    reasons = [(e["step_id"], e["reason"], e["turn"]) for e in log["entries"]]
    assert reasons == [(5, "explicit", 1), (7, "turn_end", 1), (4, "turn_end", 1)]  # hydration order
    assert api.show(5, store_dir=scenario_store).data["verified"]  # the bytes stay


def test_conf08_developer_view_isolation(scenario_store: Path) -> None:
    api.page_in(REFERENCE_QUESTION, store_dir=scenario_store)
    state_before = (scenario_store / "turn_state.json").read_bytes()
    log_before = (scenario_store / "eviction_log.json").read_bytes() if (scenario_store / "eviction_log.json").exists() else b""
    shown = api.show(1, store_dir=scenario_store).data
    assert shown["prompt_cost"] == 0 and shown["node"]["step_id"] == 1
    api.recall("port", store_dir=scenario_store)
    api.status(store_dir=scenario_store)
    assert (scenario_store / "turn_state.json").read_bytes() == state_before
    after = (scenario_store / "eviction_log.json").read_bytes() if (scenario_store / "eviction_log.json").exists() else b""
    assert after == log_before


@pytest.mark.parametrize("field", ["content", "summary", "identifiers", "payload_sha256", "token_count"])
def test_conf09_tamper_detection_on_every_read(scenario_store: Path, field: str) -> None:
    p = _node_file(scenario_store, 5)
    node = json.loads(p.read_bytes())
    node[field] = node[field] + ["x"] if isinstance(node[field], list) else (
        node[field] + 1 if isinstance(node[field], int) else node[field] + "!")
    p.write_bytes(json.dumps(node).encode())
    with pytest.raises(IntegrityError):
        api.show(5, store_dir=scenario_store)
    with pytest.raises(IntegrityError):
        api.page_in_step(5, store_dir=scenario_store)
    with pytest.raises(IntegrityError):
        api.page_in("PostgreSQL port", store_dir=scenario_store)
    res = api.validate(store_dir=scenario_store)
    assert res.exit_code == 3 and any(p.code == "tampered" for p in res.problems)


def test_conf10_explicit_failure_modes_have_distinct_codes(scenario_store: Path, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as nf:
        api.show(99, store_dir=scenario_store)
    with pytest.raises(UsageError) as use:
        api.fold_step(0, "bad", "x", store_dir=scenario_store)
    with pytest.raises(StepConflict) as conflict:
        api.fold_step(1, "another payload", "different", store_dir=scenario_store)
    _node_file(scenario_store, 2).write_bytes(b"{not json")
    with pytest.raises(IntegrityError) as integ:
        api.show(2, store_dir=scenario_store)
    with pytest.raises(NotFoundError):
        api.status(store_dir=tmp_path / "nowhere" / "s")
    codes = {int(nf.value.exit_code), int(use.value.exit_code), int(conflict.value.exit_code),
             int(integ.value.exit_code)}
    assert codes == {4, 2, 1, 3}


def test_conf10_refolding_identical_payload_is_a_noop(store: Path) -> None:
    assert api.fold_step(1, "s", "same", store_dir=store).data["status"] == "written"
    assert api.fold_step(1, "s", "same", store_dir=store).data["status"] == "unchanged"


def test_conf11_deterministic_replay_projection_across_processes(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys, json; from pathlib import Path\n"
        "from contextfork.cold.scenario import build_reference_scenario\n"
        "out = build_reference_scenario(Path(sys.argv[1]))\n"
        "print(json.dumps([[o['projection_sha256'], o['artifact_sha256']] for o in out]))\n"
    )
    outs = []
    for i, seed in enumerate(("1", "12345")):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / f"p{i}" / "ref")],
                              capture_output=True, text=True, env=env, check=True)
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    a = sorted((tmp_path / "p0" / "ref" / "cold_nodes").iterdir())
    b = sorted((tmp_path / "p1" / "ref" / "cold_nodes").iterdir())
    assert [x.read_bytes() for x in a] == [y.read_bytes() for y in b]


def test_conf12_inconsistent_state_orphans_and_broken_refs(scenario_store: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(scenario_store / "index.sqlite3")
    conn.execute("DELETE FROM nodes WHERE step_id=8")
    conn.commit()
    conn.close()
    _node_file(scenario_store, 4).unlink()  # step 7 cites step 4
    res = api.validate(store_dir=scenario_store)
    codes = {p.code for p in res.errors}
    assert {"orphan_node", "missing_node", "broken_reference"} <= codes
    assert res.exit_code == 1
    with pytest.raises(IntegrityError, match=r"step_000004\.json"):  # a lost file is not dropped
        api.rebuild_index(store_dir=scenario_store)  # silently: `fold index` refuses
    api.rebuild_index(store_dir=scenario_store, discard_old=True)  # `fold index --rebuild`
    codes = {p.code for p in api.validate(store_dir=scenario_store).errors}
    assert "orphan_node" not in codes and "missing_node" not in codes


def test_conf12_path_containment_hostile_session_ids(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo = make_repo(repo, commit=False).path
    for bad in ("../escape", "/abs", "a/b", "..", ".hidden", "x\x00y"):
        with pytest.raises(UsageError):
            api.fold_step(1, "s", "x", repo=repo, session=bad)
    assert not (tmp_path / "escape").exists()


def test_conf12_path_containment_symlink_escape(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo = make_repo(repo, commit=False).path
    outside = tmp_path / "outside"
    outside.mkdir()
    cold = repo / ".contextfork" / "cold"
    cold.mkdir(parents=True)
    (cold / "evil").symlink_to(outside, target_is_directory=True)
    with pytest.raises(IntegrityError):
        api.fold_step(1, "s", "x", repo=repo, session="evil")
    assert list(outside.iterdir()) == []
    res = api.validate(repo=repo, session="evil")
    assert res.exit_code == 3


def test_conf12_path_containment_sibling_prefix_directory(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo = make_repo(repo, commit=False).path
    cold = repo / ".contextfork" / "cold"
    sibling = repo / ".contextfork" / "cold-evil"
    (sibling / "s").mkdir(parents=True)
    cold.mkdir(parents=True)
    (cold / "s").symlink_to(sibling / "s", target_is_directory=True)
    lay = layout_at(cold / "s")
    assert lay.containment_problems()
    with pytest.raises(IntegrityError):
        api.fold_step(1, "s", "x", repo=repo, session="s")


def test_conf12_symlinked_node_file_is_refused(scenario_store: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_bytes(_node_file(scenario_store, 3).read_bytes())
    _node_file(scenario_store, 3).unlink()
    _node_file(scenario_store, 3).symlink_to(target)
    with pytest.raises(IntegrityError):
        api.show(3, store_dir=scenario_store)
    res = api.validate(store_dir=scenario_store)
    assert res.exit_code == 3 and any(p.code == "symlink" for p in res.problems)


def test_conf13_passive_interception_multi_intent(scenario_store: Path) -> None:
    sel = api.page_in(REFERENCE_QUESTION, store_dir=scenario_store).data
    picked = {p["step_id"]: p for p in sel["selected"]}
    assert set(picked) == {4, 5, 7}
    assert picked[4]["reason"] == "explains" and picked[4]["explains"] == 7
    assert "<cold-step step=\"5\"" in sel["context"] and "5433" in sel["context"]


def test_conf13_unicode_normalization_turkish_i_and_nfc(store: Path) -> None:
    api.fold_step(1, "deploy to İSTANBUL region", "x", store_dir=store)
    api.fold_step(2, "café menu (NFD: cafe\u0301)", "y", store_dir=store)
    for prompt in ("istanbul", "ıstanbul", "ISTANBUL", "İstanbul"):
        assert [p["step_id"] for p in api.page_in(prompt, store_dir=store).data["selected"]] == [1], prompt
    assert [p["step_id"] for p in api.page_in("CAFÉ", store_dir=store).data["selected"]] == [2]


def test_conf06_intent_ownership_tight_budget_gives_missing_not_stale(store: Path) -> None:
    # The old port step is tiny and would fit; the newest one does not. The intent is dropped,
    # never answered with the stale value.
    api.fold_step(1, "postgresql port 5432", "5432", store_dir=store, intents=["postgresql.port"])
    long_summary = "postgresql port moved to 5433 because " + "the old one clashed " * 20
    api.fold_step(2, long_summary, "port: 5433\n" * 200, store_dir=store, intents=["postgresql.port"])
    policy_path = store / "hydration_policy.json"
    policy = json.loads(policy_path.read_bytes())
    policy["per_call_token_cap"] = 30
    policy_path.write_text(json.dumps(policy))
    sel = api.page_in("PostgreSQL port", store_dir=store).data
    assert sel["selected"] == []
    assert [d["step_id"] for d in sel["dropped"]] == [2]
    assert sel["context"] == ""
