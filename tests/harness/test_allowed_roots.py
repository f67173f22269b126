"""CONTEXTFORK_ALLOWED_ROOTS fails closed; client paths cannot traverse or follow symlinks out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contextfork.harness.mcp.allowed_roots import (
    AllowedRoots,
    PathRefused,
    RootsError,
    load,
    parse_roots,
)


@pytest.fixture
def two_dirs(tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b


def test_valid_roots_parse_in_order(two_dirs: tuple[Path, Path]) -> None:
    a, b = two_dirs
    assert parse_roots(f"{a};{b}") == (a, b)
    assert parse_roots(f" {a} ; {b}/ ") == (a, b)


@pytest.mark.parametrize(
    "bad",
    [
        "relative/dir",
        "{a}/../b",
        "{a}/./x",
        "/",
        "C:\\",
        "{home}",
        "{a}/missing",
        "{a}/file.txt",
        "{link}",
        "{link}/inner",
        "",
        ";",
    ],
)
def test_each_bad_entry_rejects_the_whole_variable(
    bad: str, two_dirs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two_dirs
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (a / "file.txt").write_text("x")
    (b / "inner").mkdir()
    (tmp_path / "link").symlink_to(b)
    entry = bad.format(a=a, home=home, link=tmp_path / "link")
    with pytest.raises(RootsError):
        parse_roots(f"{b};{entry}" if entry not in ("", ";") else entry)


def test_unset_variable_allows_only_the_cwd(
    two_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = two_dirs
    monkeypatch.chdir(a)
    roots = load({})
    assert roots.roots == (a,)
    assert roots.source == "cwd"


def test_invalid_env_is_an_error_not_a_fallback(two_dirs: tuple[Path, Path]) -> None:
    a, _ = two_dirs
    with pytest.raises(RootsError):
        load({"CONTEXTFORK_ALLOWED_ROOTS": f"{a};relative"})


def test_paths_inside_a_root_are_accepted(two_dirs: tuple[Path, Path]) -> None:
    a, _ = two_dirs
    (a / "sub").mkdir()
    roots = AllowedRoots((a,), "env")
    assert roots.check(str(a / "sub")) == a / "sub"
    assert roots.check(str(a)) == a


def test_traversal_and_outside_paths_are_refused(two_dirs: tuple[Path, Path]) -> None:
    a, b = two_dirs
    roots = AllowedRoots((a,), "env")
    with pytest.raises(PathRefused, match="traversal"):
        roots.check(f"{a}/../b")
    with pytest.raises(PathRefused, match="outside"):
        roots.check(str(b))
    with pytest.raises(PathRefused, match="outside"):
        roots.check(str(a) + "-evil")
    with pytest.raises(PathRefused, match="NUL"):
        roots.check(f"{a}/x\x00")


def test_symlinks_inside_a_root_are_refused(two_dirs: tuple[Path, Path]) -> None:
    a, b = two_dirs
    (a / "escape").symlink_to(b)
    (a / "inner").mkdir()
    (a / "alias").symlink_to(a / "inner")
    roots = AllowedRoots((a,), "env")
    with pytest.raises(PathRefused, match="symlink"):
        roots.check(str(a / "escape"))
    with pytest.raises(PathRefused, match="symlink"):
        roots.check(str(a / "alias"))


def test_relative_paths_resolve_against_the_default_workspace(
    two_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = two_dirs
    (a / "sub").mkdir()
    monkeypatch.chdir(a)
    roots = AllowedRoots((a,), "env")
    assert roots.check("sub") == a / "sub"
    assert roots.check(None) == Path(os.path.realpath(a))
