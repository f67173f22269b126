"""The versioned JSON envelope every ``--json`` command prints (pipx-style typed results).

Shape (schemas/envelope.schema.json):
``{"envelope_version": "1", "command": str, "ok": bool, "exit_code": int, "data": any,
"problems": [{"severity", "code", "message", "path"?}]}``
"""

from __future__ import annotations

import json

from contextfork.records import FrozenRecord, Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any, Final, Literal, TypeAlias

    Severity: TypeAlias = Literal["error", "warning", "info"]

ENVELOPE_VERSION = "1"



class Problem(FrozenRecord):
    """One finding of a check; validators return lists of these instead of raising."""

    __match_args__ = ("severity", "code", "message", "path")
    severity: Final[Severity]
    code: Final[str]
    message: Final[str]
    path: Final[str | None]

    def __init__(self, severity: Severity, code: str, message: str, path: str | None = None) -> None:
        self.severity = severity
        self.code = code
        self.message = message
        self.path = path

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }
        if self.path is not None:
            out["path"] = self.path
        return out

    def line(self) -> str:
        where = f" [{self.path}]" if self.path else ""
        return f"{self.severity}: {self.code}: {self.message}{where}"


class Result(Record):
    """What a domain function hands back to the CLI/MCP layer to render."""

    __match_args__ = ("command", "data", "problems", "exit_code", "text")

    def __init__(
        self, command: str, data: Any = None, problems: list[Problem] | None = None,
        exit_code: int = 0, text: str | None = None,
    ) -> None:  # fmt: skip
        self.command = command
        self.data = data
        self.problems: list[Problem] = problems if problems is not None else []
        self.exit_code = exit_code
        self.text = text

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def envelope(result: Result) -> dict[str, Any]:
    return {
        "envelope_version": ENVELOPE_VERSION,
        "command": result.command,
        "ok": result.ok,
        "exit_code": result.exit_code,
        "data": result.data,
        "problems": [p.to_json() for p in result.problems],
    }


def error_envelope(command: str, code: str, message: str, exit_code: int) -> dict[str, Any]:
    return envelope(
        Result(
            command=command,
            problems=[Problem("error", code, message)],
            exit_code=exit_code,
        )
    )


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False, default=str)
