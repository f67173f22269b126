"""Raw transcript lines kept as spans of the file they came from, read back on demand.

A session holds what its adapter parsed; the exact source bytes of each line (what the cold
store hashes and restores, what a fork copies) stay in the file. Each span keeps the SHA-256 of
the bytes that were parsed, and every read back is checked against it: a transcript rewritten
under us is one clear error (exit 3), never other bytes passed off as the line. Appending — what
harnesses do while we read — leaves every span valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from contextfork.errors import ContextforkError, IntegrityError
from contextfork.hashing import line_digest
from contextfork.inputfile import open_regular


class SourceFile:
    """The transcript file a session was read from."""

    __slots__ = ("path",)

    def __init__(self, path: Path) -> None:
        self.path = path

    def open(self) -> BinaryIO:
        try:
            return open_regular(self.path, "transcript")
        except ContextforkError as err:
            raise self.changed(f"it can no longer be read ({err.one_line()})") from None

    def read(self, fh: BinaryIO, offset: int, length: int, digest: bytes) -> bytes:
        """The bytes of one span, checked against the digest taken when it was parsed."""
        fh.seek(offset)
        data = fh.read(length)
        if len(data) != length or line_digest(data) != digest:
            raise self.changed(f"the line at byte {offset} is not the one that was read")
        return data

    def changed(self, why: str) -> IntegrityError:
        return IntegrityError(
            f"{self.path}: the transcript changed after it was read: {why}",
            hint="it was rewritten, not appended to; run the command again on the file as it is now",
        )


class RawLine:
    """One source line (or JSON element) exactly as read, with its byte offset in the file.

    Its text is either held (lines built in memory, whole-document formats) or a span of its
    ``source`` file read back (and verified) on demand: ``text`` and ``data()`` are the same
    bytes either way.
    """

    __slots__ = ("_text", "digest", "length", "offset", "source")

    def __init__(
        self, offset: int, text: str | None = None, *, length: int = 0, digest: bytes = b"",
        source: SourceFile | None = None,
    ) -> None:
        if text is None and source is None:
            raise ValueError("a raw line needs its text or the file it is a span of")
        self.offset = offset
        self._text = text
        self.length = length
        self.digest = digest
        self.source = source

    @property
    def text(self) -> str:
        return self._text if self._text is not None else self.data().decode("utf-8")

    def data(self) -> bytes:
        if self._text is not None:
            return self._text.encode("utf-8")
        assert self.source is not None
        with self.source.open() as fh:
            return self.source.read(fh, self.offset, self.length, self.digest)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RawLine):
            return NotImplemented
        return self.offset == other.offset and self.data() == other.data()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        where = "held" if self._text is not None else f"{self.length} bytes"
        return f"RawLine(offset={self.offset}, {where})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema  # lazy: only a model holding raw lines needs it

        return core_schema.is_instance_schema(
            cls,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda r: {"offset": r.offset, "text": r.text}
            ),
        )


def read_raw(lines: Iterable[RawLine]) -> Iterator[bytes]:
    """The exact bytes of each line in turn; a source file stays open across consecutive spans."""
    fh: BinaryIO | None = None
    src: SourceFile | None = None
    try:
        for line in lines:
            if line._text is not None:
                yield line._text.encode("utf-8")
                continue
            assert line.source is not None
            if line.source is not src or fh is None:
                if fh is not None:
                    fh.close()
                src, fh = line.source, line.source.open()
            yield src.read(fh, line.offset, line.length, line.digest)
    finally:
        if fh is not None:
            fh.close()
