from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfork.cold.decisions import decisions_path, load_decisions
from contextfork.curate.api import run_verb
from contextfork.errors import IntegrityError, NotFoundError, UsageError
from tests.curate.conftest import SESSION


def test_status_lists_every_folded_step_with_its_key_and_tokens(folded: Path) -> None:
    res = run_verb(folded, SESSION, "status", {})
    steps = res.data["steps"]
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
    assert all(s["key"] and s["tokens"] > 0 for s in steps)
    assert res.data["total_tokens"] == sum(s["tokens"] for s in steps)
    assert not any(s["pinned"] for s in steps)


def test_pin_is_recorded_by_stable_key_and_unpin_drops_it(folded: Path) -> None:
    key = run_verb(folded, SESSION, "status", {}).data["steps"][1]["key"]
    res = run_verb(folded, SESSION, "pin", {"step": 2})
    assert res.data["changed"] and res.data["keys"] == [key]
    assert load_decisions(folded, SESSION).pinned == {key}
    assert run_verb(folded, SESSION, "status", {}).data["steps"][1]["pinned"] is True
    again = run_verb(folded, SESSION, "pin", {"key": key})
    assert again.data["changed"] is False
    run_verb(folded, SESSION, "unpin", {"step": 2})
    assert load_decisions(folded, SESSION).pinned == frozenset()


def test_pin_of_a_span_holds_every_step_in_it(folded: Path) -> None:
    run_verb(folded, SESSION, "pin", {"steps": [2, 4]})
    d = load_decisions(folded, SESSION)
    keys = [s["key"] for s in run_verb(folded, SESSION, "status", {}).data["steps"][1:4]]
    assert d.pinned == set(keys)


def test_pin_of_an_unknown_step_is_not_found(folded: Path) -> None:
    with pytest.raises(NotFoundError, match="step 99"):
        run_verb(folded, SESSION, "pin", {"step": 99})
    with pytest.raises(NotFoundError):
        run_verb(folded, SESSION, "pin", {"key": "uuid:nope"})


@pytest.mark.parametrize("verb,args", [
    ("pin", {}),
    ("pin", {"step": "2"}),
    ("pin", {"step": True}),
    ("pin", {"step": 2, "key": "x"}),
    ("pin", {"steps": [4, 2]}),
    ("pin", {"stp": 2}),
    ("brief", {"step": 2}),
    ("brief", {"step": 2, "text": "   "}),
    ("brief", {"step": 2, "text": "x" * 2001}),
    ("peek", {"step": 2, "max_chars": -1}),
    ("peek", {"step": 2, "view": "html"}),
    ("reboundary", {"steps": [2, 3]}),
    ("unmark", {"step": 2, "kind": "everything"}),
    ("status", {"step": 1}),
    ("fold-all", {}),
])
def test_bad_arguments_are_one_line_usage_errors(folded: Path, verb: str, args: dict[str, object]) -> None:
    with pytest.raises(UsageError) as err:
        run_verb(folded, SESSION, verb, args)
    assert "\n" not in err.value.one_line()


def test_verbs_on_a_session_without_a_store_are_not_found(folded: Path) -> None:
    with pytest.raises(NotFoundError):
        run_verb(folded, "other", "status", {})


def test_decisions_survive_a_new_process(folded: Path) -> None:
    import subprocess
    import sys

    run_verb(folded, SESSION, "pin", {"step": 3})
    run_verb(folded, SESSION, "brief", {"steps": [4, 5], "text": "parts 4-5 checked, all fine"})
    code = ("import json,sys; from pathlib import Path; from contextfork.curate.api import run_verb;"
            "print(json.dumps(run_verb(Path(sys.argv[1]), 's1', 'status', {}).data['decisions']))")
    out = subprocess.run([sys.executable, "-c", code, str(folded)], capture_output=True,
                         text=True, check=True).stdout
    d = json.loads(out)
    assert [p["step"] for p in d["pinned"]] == [3]
    assert d["briefs"][0]["text"] == "parts 4-5 checked, all fine"
    assert d["briefs"][0]["steps"] == [4, 5]


def test_a_tampered_decisions_file_is_an_integrity_error(folded: Path) -> None:
    run_verb(folded, SESSION, "pin", {"step": 3})
    path = decisions_path(folded, SESSION)
    doc = json.loads(path.read_text())
    doc["pinned"] = []
    path.write_text(json.dumps(doc))
    with pytest.raises(IntegrityError) as err:
        run_verb(folded, SESSION, "status", {})
    assert err.value.exit_code == 3
    assert "does not verify" in err.value.one_line()
    with pytest.raises(IntegrityError):
        run_verb(folded, SESSION, "pin", {"step": 4})  # never overwrites what it cannot verify


def test_a_torn_decisions_file_is_an_integrity_error(folded: Path) -> None:
    run_verb(folded, SESSION, "pin", {"step": 3})
    path = decisions_path(folded, SESSION)
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(IntegrityError, match="not valid JSON"):
        load_decisions(folded, SESSION)


def test_same_decisions_in_any_order_give_the_same_file(folded: Path, tmp_path: Path) -> None:
    run_verb(folded, SESSION, "pin", {"step": 2})
    run_verb(folded, SESSION, "pin", {"step": 5})
    first = decisions_path(folded, SESSION).read_bytes()
    decisions_path(folded, SESSION).unlink()
    run_verb(folded, SESSION, "pin", {"step": 5})
    run_verb(folded, SESSION, "pin", {"step": 2})
    assert decisions_path(folded, SESSION).read_bytes() == first


def test_a_symlinked_decisions_file_is_refused_everywhere(folded: Path, tmp_path: Path) -> None:
    from contextfork.cold import api as cold

    outside = tmp_path / "elsewhere.json"
    run_verb(folded, SESSION, "pin", {"step": 3})
    path = decisions_path(folded, SESSION)
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(IntegrityError, match="symlink"):
        load_decisions(folded, SESSION)
    with pytest.raises(IntegrityError, match="symlink"):
        run_verb(folded, SESSION, "pin", {"step": 4})
    with pytest.raises(IntegrityError, match="symlink"):
        cold.page_in("part 3 values", repo=folded, session=SESSION)
    assert outside.read_bytes().count(b'"pinned"') == 1  # never written through


def test_concurrent_decisions_from_many_processes_are_all_kept(folded: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from contextfork.curate.api import run_verb;"
            "run_verb(Path(sys.argv[1]), 's1', 'pin', {'step': int(sys.argv[2])})")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(folded), str(n)])
             for n in range(1, 7)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    d = load_decisions(folded, SESSION)
    assert len(d.pinned) == 6 and d.revision == 6


def test_a_subdirectory_names_its_repositorys_decisions(folded: Path) -> None:
    sub = folded / "src"
    sub.mkdir(exist_ok=True)
    run_verb(sub, SESSION, "pin", {"step": 2})
    assert len(load_decisions(folded, SESSION).pinned) == 1
    assert not (sub / ".contextfork").exists()
