"""The normalized session model every adapter produces (SPEC §2).

A ``Step`` is one model call's output plus the tool results it caused (an IPCF "turn").
Raw source lines are byte-exact spans of the transcript (``source.RawLine``), so the cold store
can hash and restore them losslessly without the session holding a second copy of the file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

# re-exported: adapters and callers name a step's raw lines from here
from contextfork.transcript.source import RawLine as RawLine
from contextfork.transcript.source import read_raw


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: One ``__pydantic_fields_set__`` per model type and set of given fields (``share_fields_set``).
FieldsSets = dict[tuple[type, frozenset[str]], set[str]]


def share_fields_set(model: BaseModel, shared: FieldsSets) -> None:
    """Give ``model`` the set of given field names an earlier model of its type and fields
    holds. Pydantic keeps one such set per instance: 216 bytes for a block, 728 for a step,
    ~4 MB of the 30k models of a 55 MB session (issue 27). Shared within one session's build
    only; nothing here reads ``model_fields_set``, and a field assigned later (a step's
    ``preserved``, its emptied ``blocks``) is then counted as given for its companions too."""
    own = model.__pydantic_fields_set__
    same = shared.setdefault((type(model), frozenset(own)), own)
    if same is not own:
        object.__setattr__(model, "__pydantic_fields_set__", same)


class TextBlock(_Model):
    type: Literal["text"] = "text"
    role: Literal["system", "user", "assistant"]
    text: str
    # True for text the harness injected in the user's name (command caveats, compaction
    # summaries, environment context): it is in the prompt but is not a request the user typed.
    meta: bool = False


class ThinkingBlock(_Model):
    type: Literal["thinking"] = "thinking"
    text: str


class ToolCall(_Model):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: dict[str, object] = Field(default_factory=dict)


#: Reads a result's text back from the exact bytes of the source line that holds it.
Pick = Callable[[bytes], str]

#: A result at least this long stays in its file when the reader asks (``ToolResult.of``).
IN_FILE_CHARS = 1024


class ToolResult(_Model):
    """A tool's output. Built by ``in_file``, its text stays in the transcript and ``content``
    reads it back (verified) on each access: a whole-session command then holds no second copy
    of the outputs, most of a long session's bytes (issue 27)."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    content: str
    is_error: bool = False
    exit_code: int | None = None

    @classmethod
    def of(
        cls, text: str, *, call_id: str, is_error: bool, exit_code: int | None,
        span: tuple[RawLine, Pick] | None = None,
    ) -> ToolResult:
        """A result of ``text``; left in the file (``in_file``) when ``span`` names the line of a
        file it is read back from and the text is at least ``IN_FILE_CHARS`` long."""
        if span is not None and span[0].source is not None and len(text) >= IN_FILE_CHARS:
            return cls.in_file(*span, call_id=call_id, is_error=is_error, exit_code=exit_code)
        return cls(call_id=call_id, content=text, is_error=is_error, exit_code=exit_code)

    @classmethod
    def in_file(
        cls, line: RawLine, pick: Pick, *, call_id: str, is_error: bool, exit_code: int | None
    ) -> ToolResult:
        """A result whose ``content`` is ``pick(line.data())``, computed on each access."""
        result = cls.model_construct(
            _fields_set={"call_id", "content", "is_error", "exit_code"},
            call_id=call_id, content="", is_error=is_error, exit_code=exit_code,
        )
        del result.__dict__["content"]
        object.__setattr__(result, "__pydantic_private__", {"in_file": (line, pick)})
        return result

    def hold(self) -> None:
        """Keep the text in memory from now on: for a reader that uses it over and over (each
        read of a result in the file makes a new string)."""
        if "content" not in self.__dict__:
            self.content = self.content

    def _in_file(self) -> tuple[RawLine, Pick] | None:
        private = self.__pydantic_private__
        return None if private is None else private.get("in_file")

    if not TYPE_CHECKING:  # only ``content`` of a result built by ``in_file`` is ever missing

        def __getattr__(self, name: str) -> Any:
            where = self._in_file() if name == "content" else None
            if where is None:
                return super().__getattr__(name)
            line, pick = where
            return pick(line.data())

    @model_serializer(mode="wrap")
    def _with_content(self, handler: SerializerFunctionWrapHandler) -> Any:
        if "content" in self.__dict__:
            return handler(self)
        # Put in its place for the dump (which then honours include and exclude), then let go.
        fields, text = self.__dict__, self.content
        held = dict(fields)
        fields.clear()
        fields.update({k: text if k == "content" else held[k] for k in type(self).model_fields})
        try:
            return handler(self)
        finally:
            fields.clear()
            fields.update(held)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ToolResult) and (self._in_file() or other._in_file()):
            return self.model_dump() == other.model_dump()
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


Block = Annotated[TextBlock | ThinkingBlock | ToolCall | ToolResult, Field(discriminator="type")]


class Usage(_Model):
    """Usage as recorded by the harness (what the user is billed for)."""

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


class Step(_Model):
    index: int  # 1-based, a display position only
    # The stable identity of the step, anchored in the harness's own ids (``uuid:<uuid of the
    # step's first line>`` for Claude Code, ``id:<entry id>`` for pi, ``msg:<n>`` for message
    # arrays, ``offset:<byte offset of the first line>`` for append-only logs without ids). It
    # does not change when the session grows or is compacted: the cold store and forks key on it.
    key: str | None = None
    blocks: list[Block] = Field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    usage: Usage | None = None
    model: str | None = None
    message_id: str | None = None
    request_id: str | None = None
    raw: list[RawLine] = Field(default_factory=list)
    after_compaction: bool = False
    # Kept verbatim by the harness across the last compaction (Claude Code 2.1
    # ``compactMetadata.preservedSegment``): before the boundary in the file, yet in the live view.
    preserved: bool = False

    @property
    def identity(self) -> str:
        """``key``, or the position when an adapter could not anchor the step in any id."""
        return self.key or f"index:{self.index}"

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.blocks if isinstance(b, ToolCall)]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [b for b in self.blocks if isinstance(b, ToolResult)]

    @property
    def user_texts(self) -> list[TextBlock]:
        return [b for b in self.blocks if isinstance(b, TextBlock) and b.role == "user"]

    def raw_bytes(self) -> bytes:
        """The step's source lines, exactly as in the file (read back and verified)."""
        return b"".join(read_raw(self.raw))


class Compaction(_Model):
    """A real compaction recorded by the harness (Claude Code compact_boundary, Codex compacted)."""

    before_step: int
    timestamp: str | None = None
    trigger: str | None = None
    pre_tokens: int | None = None


class Session(_Model):
    format: Literal[
        "claude-code", "codex", "pi", "mini-swe-agent", "openai-chat", "anthropic-messages"
    ]
    session_id: str | None = None
    path: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    system_prompt: str | None = None
    steps: list[Step] = Field(default_factory=list)
    compactions: list[Compaction] = Field(default_factory=list)
    malformed_lines: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    model: str | None = None
    # Claude Code: lines on rewound (abandoned) branches, kept out of ``steps`` but counted.
    abandoned_lines: int = 0
    # Claude Code 2.1: for each compaction (by ``before_step``), the steps it kept verbatim.
    preserved: dict[int, list[int]] = Field(default_factory=dict)
    # A subagent (Claude Code sidechain) has the id of the agent; its parent lists it here.
    agent_id: str | None = None
    subagents: list[Session] = Field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for s in self.steps for c in s.tool_calls]

    def live_steps(self) -> list[Step]:
        """What the harness still sends: the steps after the last compaction, plus the ones it
        kept verbatim across it (preserved segment). Without a compaction: every step."""
        if not self.compactions:
            return list(self.steps)
        start = self.compactions[-1].before_step
        return [s for s in self.steps if s.index >= start or s.preserved]
