"""A small, strict JSON Schema (draft 2020-12) checker for the schemas our models generate.

``validate`` checks every file of a package against its schema. Doing that with ``jsonschema``
(and again with the pydantic models) cost ~150 ms of imports per run, more than all of the git
work validate does. The package schemas are generated from the pydantic models
(``contextfork.schemagen``) and use a handful of keywords; this module implements exactly those
and refuses a schema that uses any other (``UnsupportedSchema``), so it can never skip a check
silently. Tests compare its verdicts with ``jsonschema``'s on real and mutated packages.

Two rules are stricter than the ``jsonschema`` package and match the pydantic models instead:
``pattern``'s ``$`` matches only at the very end (ECMA-262, as pydantic; Python's ``re``
also lets it match before a final newline), and a string must be valid Unicode (a lone
surrogate from a ``\\ud800`` escape is refused, as pydantic refuses it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

# Annotations (no effect on validity) and the keywords this checker implements.
_ANNOTATIONS = frozenset({"title", "description", "default", "$id", "$schema", "$defs", "examples"})
_KEYWORDS = frozenset(
    {"type", "anyOf", "items", "additionalProperties", "properties", "required", "$ref", "enum",
     "pattern", "minimum"}
)  # fmt: skip
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


class UnsupportedSchema(ValueError):
    """The schema uses a keyword (or form) this checker does not implement."""


def _type_ok(t: str, v: Any) -> bool:
    if t == "string":
        return isinstance(v, str)
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if t == "integer":
        return isinstance(v, int) or (isinstance(v, float) and v.is_integer())
    return isinstance(v, int | float)  # "number"


def _same(a: Any, b: Any) -> bool:
    """JSON equality for ``enum``: true is not 1, 1.0 is 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


@cache
def _pattern(p: str) -> re.Pattern[str]:
    # ECMA-262 ``$`` (no multiline flag) is the end of input; Python's also matches before a
    # final "\n". Only an unescaped final ``$`` is rewritten; any other ``$`` is refused.
    body = p[:-1] if p.endswith("$") and not p.endswith("\\$") else p
    if "$" in body.replace("\\$", ""):
        raise UnsupportedSchema(f"pattern with an inner '$': {p!r}")
    return re.compile(body + (r"\Z" if body is not p else ""))


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


class Checker:
    """One schema, checked for supported keywords once; ``errors`` lists every violation."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        self._check_supported(schema)
        self._cache: dict[int, _Check] = {}

    def _check_supported(self, s: Any) -> None:
        if isinstance(s, bool):
            return
        if not isinstance(s, dict):
            raise UnsupportedSchema(f"not a schema: {_short(s)}")
        unknown = set(s) - _KEYWORDS - _ANNOTATIONS
        if unknown:
            raise UnsupportedSchema(f"unsupported keyword(s): {sorted(unknown)}")
        t = s.get("type")
        if t is not None and (not isinstance(t, str) or t not in _TYPES):
            raise UnsupportedSchema(f"unsupported type: {t!r}")
        if "$ref" in s:
            self._resolve(s["$ref"])
        if "pattern" in s:
            _pattern(s["pattern"])
        for sub in s.get("anyOf", []):
            self._check_supported(sub)
        for sub in s.get("properties", {}).values():
            self._check_supported(sub)
        for key in ("items", "additionalProperties"):
            if key in s:
                self._check_supported(s[key])
        for sub in s.get("$defs", {}).values():
            self._check_supported(sub)

    def _resolve(self, ref: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#/$defs/") or ref.count("/") != 2:
            raise UnsupportedSchema(f"unsupported $ref: {ref!r}")
        try:
            return self.root["$defs"][ref.removeprefix("#/$defs/")]
        except KeyError:
            raise UnsupportedSchema(f"unresolvable $ref: {ref!r}") from None

    def errors(self, instance: Any) -> list[str]:
        """Every violation as ``where: message`` (``(root)`` for the document itself)."""
        out: list[tuple[str, str]] = []
        self._compiled(self.root)(instance, "", out)
        return [f"{where or '(root)'}: {msg}" for where, msg in out]

    # Each (sub)schema is turned once into a closure that checks exactly its keywords: walking
    # the schema dicts for each of a package's thousands of values cost more than the check.

    def _compiled(self, s: Any) -> _Check:
        key = id(s)
        found = self._cache.get(key)
        if found is None:
            cell: list[_Check] = []
            self._cache[key] = lambda v, at, out: cell[0](v, at, out)  # a $ref back to s
            found = self._compile(s)
            cell.append(found)
            self._cache[key] = found
        return found

    def _compile(self, s: Any) -> _Check:
        if s is True:
            return _nothing
        if s is False:
            return _refuse_all
        checks: list[_Check] = []
        if "$ref" in s:
            checks.append(self._compiled(self._resolve(s["$ref"])))
        t = s.get("type")
        if "enum" in s:
            checks.append(_enum(s["enum"]))
        if "anyOf" in s:
            checks.append(self._any_of(s["anyOf"]))
        if "pattern" in s:
            checks.append(_pattern_check(s["pattern"]))
        if "minimum" in s:
            checks.append(_minimum(s["minimum"]))
        if t in (None, "object") and ("properties" in s or "required" in s or "additionalProperties" in s):
            checks.append(self._object_check(s))
        if t in (None, "array") and "items" in s:
            checks.append(self._items_check(s["items"]))
        return _typed(t, checks)

    def _any_of(self, subs: list[Any]) -> _Check:
        compiled = [self._compiled(sub) for sub in subs]

        def check(v: Any, at: str, out: list[tuple[str, str]]) -> None:
            for c in compiled:
                found: list[tuple[str, str]] = []
                c(v, "", found)
                if not found:
                    return
            out.append((at, f"{_short(v)} is not valid under any of the given schemas"))

        return check

    def _object_check(self, s: dict[str, Any]) -> _Check:
        props = {k: self._compiled(sub) for k, sub in s.get("properties", {}).items()}
        required = list(s.get("required", []))
        extra = s.get("additionalProperties", True)
        extra_check = None if isinstance(extra, bool) else self._compiled(extra)

        def check(v: Any, at: str, out: list[tuple[str, str]]) -> None:
            if not isinstance(v, dict):
                return
            for name in required:
                if name not in v:
                    out.append((at, f"{name!r} is a required property"))
            for key, value in v.items():
                where = f"{at}/{key}" if at else str(key)
                if not (key.isascii() or _valid_unicode(key)):
                    out.append((where, "property name is not valid Unicode (lone surrogate)"))
                sub = props.get(key)
                if sub is not None:
                    sub(value, where, out)
                elif extra is False:
                    out.append((at, f"additional property {key!r} is not allowed"))
                elif extra_check is not None:
                    extra_check(value, where, out)

        return check

    def _items_check(self, items: Any) -> _Check:
        sub = self._compiled(items)

        def check(v: Any, at: str, out: list[tuple[str, str]]) -> None:
            if isinstance(v, list):
                for i, item in enumerate(v):
                    sub(item, f"{at}/{i}" if at else str(i), out)

        return check


_Check = Callable[[Any, str, list[tuple[str, str]]], None]


def _nothing(v: Any, at: str, out: list[tuple[str, str]]) -> None:
    return None


def _refuse_all(v: Any, at: str, out: list[tuple[str, str]]) -> None:
    out.append((at, "no value is allowed here"))


def _typed(t: str | None, checks: list[_Check]) -> _Check:
    """The type check first (nothing else is checked on a value of the wrong type), then the
    Unicode rule for strings, then the schema's other keywords."""

    def check(v: Any, at: str, out: list[tuple[str, str]]) -> None:
        if t is not None and not _type_ok(t, v):
            out.append((at, f"{_short(v)} is not of type {t!r}"))
            return
        if isinstance(v, str) and not (v.isascii() or _valid_unicode(v)):
            out.append((at, "string is not valid Unicode (lone surrogate)"))
        for c in checks:
            c(v, at, out)

    return check


def _enum(values: list[Any]) -> _Check:
    def check(v: Any, at: str, out: list[tuple[str, str]]) -> None:
        if not any(_same(v, e) for e in values):
            out.append((at, f"{_short(v)} is not one of {values!r}"))

    return check


def _pattern_check(p: str) -> _Check:
    rx = _pattern(p)

    def check(v: Any, at: str, out: list[tuple[str, str]]) -> None:
        if isinstance(v, str) and not rx.search(v):
            out.append((at, f"{_short(v)} does not match {p!r}"))

    return check


def _minimum(m: Any) -> _Check:
    def check(v: Any, at: str, out: list[tuple[str, str]]) -> None:
        if _type_ok("number", v) and v < m:
            out.append((at, f"{v!r} is less than the minimum of {m!r}"))

    return check


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@cache
def checker(name: str) -> Checker:
    """The checker of one schema in ``schemas/`` (loaded and checked once per process)."""
    from contextfork.resources import load_schema

    return Checker(load_schema(name))


def check(name: str, instance: Any) -> list[str]:
    """All violations of schema ``name`` as one-line messages (empty list when valid)."""
    return checker(name).errors(instance)


__all__ = ["Checker", "UnsupportedSchema", "check", "checker"]
