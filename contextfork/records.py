"""Value classes for the pre-commit hook's path, without the ``dataclasses`` module.

``import dataclasses`` loads ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``), and each
``@dataclass`` compiles its methods from source: ~7 ms of CPU on every cold checkpoint for a
dozen small classes (issue 27; ``tests/lifecycle/test_hook_cost.py`` pins that the hook loads
neither). A class on that path writes its own ``__init__`` and lists its fields, in order, in
``__match_args__``; ``Record`` compares and prints by them as a dataclass would, and
``FrozenRecord`` hashes by them too (its fields are ``Final`` for the type checker).
"""

from __future__ import annotations


class Record:
    """Equal to another instance of the same class with equal fields; unhashable (mutable)."""

    __match_args__: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # as a mutable dataclass: eq without hash

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__ or not isinstance(other, Record):
            return NotImplemented
        return self._fields() == other._fields()

    def as_dict(self) -> dict[str, object]:
        """The fields by name (``dataclasses.asdict`` of flat fields)."""
        return {name: getattr(self, name) for name in self.__match_args__}

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({inner})"


class FrozenRecord(Record):
    """A ``Record`` whose fields never change after ``__init__``: hashable by them."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._fields())
