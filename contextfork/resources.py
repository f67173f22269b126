"""Locate the templates and schemas, inside the wheel or in a source checkout."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from contextfork.jinjafilters import FILTERS
from contextfork.jsoncheck import Checker
from contextfork.layout import cache_dir

_PKG = Path(__file__).resolve().parent


@cache
def data_dir(kind: str) -> Path:
    """``templates`` or ``schemas``: packaged copy first (wheel), then the repo's top level."""
    packaged = _PKG / "_data" / kind
    if packaged.is_dir():
        return packaged
    source = _PKG.parent / kind
    if source.is_dir():
        return source
    raise FileNotFoundError(f"contextfork data directory {kind!r} not found (broken install?)")


def template_path(name: str) -> Path:
    return data_dir("templates") / name


def schema_path(name: str) -> Path:
    return data_dir("schemas") / name


@cache
def load_schema(name: str) -> dict[str, Any]:
    with open(schema_path(name), encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


@cache
def _bytecode_cache() -> Any:
    """Compiled templates cached on disk: compiling the handoff template costs ~20 ms per export."""
    import os

    import jinja2

    target = cache_dir("jinja2")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(target, os.W_OK):
        return None
    return jinja2.FileSystemBytecodeCache(str(target))


@cache
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        bytecode_cache=_bytecode_cache(),
        autoescape=False,  # noqa: S701 - markdown and shell output, not HTML
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(FILTERS)  # failed-approach wording shared with harness/briefs.py
    return env


def load_template(name: str) -> Any:
    """Import jinja2 and load (or compile) a template; callers on a hot path call this while
    a subprocess works, so the ~20 ms import overlaps with it."""
    return _environment().get_template(name)


def render_template(name: str, **context: Any) -> str:
    """Render a jinja2 template from templates/ (jinja2 imported lazily: not on hook paths)."""
    text: str = load_template(name).render(**context)
    return text


@cache
def _html_environment() -> Any:
    """Autoescaping twin of ``_environment`` for the inspector's HTML pages."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        bytecode_cache=_bytecode_cache(),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(FILTERS)  # the package page words the handoff parts like the summary
    return env


def render_html_template(name: str, **context: Any) -> str:
    """Render an HTML template (autoescaped: transcript text is untrusted input)."""
    text: str = _html_environment().get_template(name).render(**context)
    return text


@cache
def schema_checker(name: str) -> Checker:
    """The compiled checker of one schema in ``schemas/`` (built once per process)."""
    return Checker(load_schema(name))


def validate_against_schema(name: str, instance: Any) -> list[str]:
    """All schema violations as one-line messages (empty list when valid).

    ``contextfork.jsoncheck``, not the ``jsonschema`` package: building a ``jsonschema``
    validator per document cost 84 % of ``fold validate`` at 100k nodes (issue 27), and its
    import ~150 ms per package ``validate`` (issue 15). Tests hold the two to the same verdicts.
    """
    return schema_checker(name).errors(instance)
