"""One exception family with named exit codes, so every command fails the same way.

The codes are part of the CLI contract (README "Exit codes"): scripts and hooks branch on them.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    CHECK_FAILED = 1
    USAGE = 2
    INTEGRITY = 3
    NOT_FOUND = 4
    DRIFT = 5


class ContextforkError(Exception):
    """A user-facing failure: one line of text plus an exit code, never a traceback."""

    exit_code: ExitCode = ExitCode.CHECK_FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message.replace("\n", " ").strip()
        if self.hint:
            text = f"{text} ({self.hint})"
        return text


class CheckFailed(ContextforkError):
    exit_code = ExitCode.CHECK_FAILED


class UsageError(ContextforkError):
    exit_code = ExitCode.USAGE


class IntegrityError(ContextforkError):
    exit_code = ExitCode.INTEGRITY


class UnsafeStateDir(IntegrityError):
    """``.contextfork`` (or a part of it) is a symlink or a file: never read or written through."""


class NotProvenanced(IntegrityError):
    """A package nobody made, pulled or accepted here (``contextfork.provenance``): not resumed."""


class RedactionUnavailable(IntegrityError):
    """The secret scrubber (``contextfork.redact``) cannot load: export refuses rather than
    store transcript-derived text unscrubbed."""


class NotFoundError(ContextforkError):
    exit_code = ExitCode.NOT_FOUND


class DriftError(ContextforkError):
    exit_code = ExitCode.DRIFT


class GitError(ContextforkError):
    """git itself refused; the message carries git's own first error line."""

    exit_code = ExitCode.CHECK_FAILED
