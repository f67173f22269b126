"""A small, strict JSON Schema (draft 2020-12) checker for the schemas our models generate.

``contextfork.resources.validate_against_schema`` runs it, one compiled checker per schema and
process: package ``validate`` checks every file of a package with it, ``fold validate`` every
cold node. ``jsonschema`` cost ~150 ms of imports per package validate (issue 15), and building
its validator for each of 100k cold nodes was 84 % of ``fold validate`` (issue 27). Every schema
in ``schemas/`` is generated from (or kept beside) a pydantic model and uses a handful of
keywords; this module implements exactly those and refuses a schema that uses any other
(``UnsupportedSchema``), so it can never skip a check silently. Tests compare its verdicts with
``jsonschema``'s on real and mutated package and cold-store files.

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
     "const", "pattern", "minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength",
     "minItems", "propertyNames"}
)  # fmt: skip
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength", "minItems")
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
        types = t if isinstance(t, list) and t else [t]
        if t is not None and not all(isinstance(x, str) and x in _TYPES for x in types):
            raise UnsupportedSchema(f"unsupported type: {t!r}")
        for key in _BOUNDS:
            if key in s and (isinstance(s[key], bool) or not isinstance(s[key], int | float)):
                raise UnsupportedSchema(f"{key} is not a number: {s[key]!r}")
        if "$ref" in s:
            self._resolve(s["$ref"])
        if "pattern" in s:
            _pattern(s["pattern"])
        for sub in s.get("anyOf", []):
            self._check_supported(sub)
        for sub in s.get("properties", {}).values():
            self._check_supported(sub)
        for key in ("items", "additionalProperties", "propertyNames"):
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
        out: list[tuple[Any, str]] = []
        self._compiled(self.root)(instance, (), out)
        return [f"{_where(at)}: {msg}" for at, msg in out]

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
        if "const" in s:
            checks.append(_const(s["const"]))
        if "anyOf" in s:
            checks.append(self._any_of(s["anyOf"]))
        if "pattern" in s:
            checks.append(_pattern_check(s["pattern"]))
        checks.extend(_bound(key, s[key]) for key in _BOUNDS if key in s)
        if _may_be(t, "object") and not {"properties", "required", "additionalProperties"}.isdisjoint(s):
            checks.append(self._object_check(s))
        if _may_be(t, "object") and "propertyNames" in s:
            checks.append(self._names_check(s["propertyNames"]))
        if _may_be(t, "array") and "items" in s:
            checks.append(self._items_check(s["items"]))
        return _typed(t, checks)

    def _any_of(self, subs: list[Any]) -> _Check:
        compiled = [self._compiled(sub) for sub in subs]

        def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
            for c in compiled:
                found: list[tuple[Any, str]] = []
                c(v, (), found)
                if not found:
                    return
            out.append((at, f"{_short(v)} is not valid under any of the given schemas"))

        return check

    def _object_check(self, s: dict[str, Any]) -> _Check:
        props = {k: self._compiled(sub) for k, sub in s.get("properties", {}).items()}
        required = list(s.get("required", []))
        extra = s.get("additionalProperties", True)
        extra_check = None if isinstance(extra, bool) else self._compiled(extra)
        # Properties whose schema is a bare type (a node's strings and counts) are checked here,
        # without a call, when the value has that exact JSON type (and is ASCII, for a string).
        plain = {k: _EXACT[sub["type"]] for k, sub in s.get("properties", {}).items()
                 if isinstance(sub, dict) and set(sub) <= _BARE and _EXACT.get(str(sub.get("type")))}  # fmt: skip

        def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
            if not isinstance(v, dict):
                return
            for name in required:
                if name not in v:
                    out.append((at, f"{name!r} is a required property"))
            for key, value in v.items():
                exact = plain.get(key)
                if exact is not None and type(value) is exact and not (
                    type(value) is str and not value.isascii()
                ):
                    continue
                where = (at, key)
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

    def _names_check(self, names: Any) -> _Check:
        sub = self._compiled(names)

        def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
            if isinstance(v, dict):
                for key in v:
                    found: list[tuple[Any, str]] = []
                    sub(key, (), found)
                    out.extend((at, f"property name {msg}") for _, msg in found)

        return check

    def _items_check(self, items: Any) -> _Check:
        sub = self._compiled(items)
        plain_strings = items == {"type": "string"}

        def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
            if not isinstance(v, list):
                return
            if plain_strings:  # a node's term lists: one C loop when every item is an ASCII str
                try:
                    if all(map(str.isascii, v)):
                        return
                except TypeError:  # an item that is not a string: the loop below names it
                    pass
            for i, item in enumerate(v):
                sub(item, (at, i), out)

        return check


# ``at`` is where a value sits: ``()`` for the document, else ``(parent's at, key or index)``,
# joined into ``a/b/0`` only for a violation (formatting it for every value cost a third of a
# node's check).
_Check = Callable[[Any, Any, list[tuple[Any, str]]], None]


def _where(at: Any) -> str:
    keys: list[str] = []
    while at:
        at, key = at
        keys.append(str(key))
    return "/".join(reversed(keys)) or "(root)"


def _nothing(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
    return None


def _refuse_all(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
    out.append((at, "no value is allowed here"))


_BARE = frozenset({"type", "title", "description", "default", "examples"})
# The Python type json.loads gives a value of each JSON type (a subclass takes the slow path).
_EXACT: dict[str, type] = {"string": str, "object": dict, "array": list, "boolean": bool,
                           "integer": int, "null": type(None)}  # fmt: skip


def _may_be(t: str | list[str] | None, kind: str) -> bool:
    return t is None or t == kind or (isinstance(t, list) and kind in t)


def _typed(t: str | list[str] | None, checks: list[_Check]) -> _Check:
    """The type check first (nothing else is checked on a value of the wrong type), then the
    Unicode rule for strings, then the schema's other keywords."""
    types = [t] if isinstance(t, str) else t
    exact = _EXACT.get(t) if isinstance(t, str) else None

    def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
        if exact is not None and type(v) is exact:  # the fast path: exact JSON types
            pass
        elif types is not None and not any(_type_ok(x, v) for x in types):
            out.append((at, f"{_short(v)} is not of type {t!r}"))
            return
        if isinstance(v, str) and not (v.isascii() or _valid_unicode(v)):
            out.append((at, "string is not valid Unicode (lone surrogate)"))
        for c in checks:
            c(v, at, out)

    return check


def _enum(values: list[Any]) -> _Check:
    def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
        if not any(_same(v, e) for e in values):
            out.append((at, f"{_short(v)} is not one of {values!r}"))

    return check


def _const(value: Any) -> _Check:
    def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
        if not _same(v, value):
            out.append((at, f"{value!r} was expected"))

    return check


def _pattern_check(p: str) -> _Check:
    rx = _pattern(p)

    def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
        if isinstance(v, str) and not rx.search(v):
            out.append((at, f"{_short(v)} does not match {p!r}"))

    return check


_BOUND_RULES: dict[str, tuple[str, Callable[[Any, Any], bool], str]] = {
    # keyword: (the type it applies to, the test a valid value passes, the message)
    "minimum": ("number", lambda v, m: v >= m, "is less than the minimum of"),
    "maximum": ("number", lambda v, m: v <= m, "is greater than the maximum of"),
    "exclusiveMinimum": ("number", lambda v, m: v > m, "is less than or equal to the minimum of"),
    "minLength": ("string", lambda v, m: len(v) >= m, "is shorter than"),
    "maxLength": ("string", lambda v, m: len(v) <= m, "is longer than"),
    "minItems": ("array", lambda v, m: len(v) >= m, "has fewer items than"),
}


def _bound(key: str, m: Any) -> _Check:
    kind, ok, says = _BOUND_RULES[key]

    def check(v: Any, at: Any, out: list[tuple[Any, str]]) -> None:
        if _type_ok(kind, v) and not ok(v, m):
            out.append((at, f"{_short(v)} {says} {m!r}"))

    return check


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


__all__ = ["Checker", "UnsupportedSchema"]
