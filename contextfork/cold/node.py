"""A cold node as plain data: build it once at fold time, verify all three identities on read.

Plain dicts (not pydantic) so the page-in path that hooks use stays free of heavy imports;
``models.ColdNode`` describes the same shape for validation and the JSON Schema test.

Identities (IPCF-1.1):
- ``payload_sha256``: the stored payload bytes (after secret redaction);
- ``projection_sha256``: canonical JSON of what the index is derived from (projection_version,
  step_id, NFC content, sorted identifiers/files/commands/errors, policy hash);
- ``artifact_sha256``: canonical JSON of the whole node minus that field.
"""

from __future__ import annotations

import base64
import json
import unicodedata
from typing import Any

from contextfork.cold.identifiers import Extracted, extract, normalize, step_refs
from contextfork.cold.layout import IPCF_VERSION, NODE_VERSION, step_key
from contextfork.cold.projection import PROJECTION_V2, normative_terms, projection_v2
from contextfork.errors import IntegrityError
from contextfork.hashing import canonical_json, canonical_sha256, sha256_bytes
from contextfork.redact import redact_text

MAX_IDENTIFIERS = 4000


def payload_bytes_of(node: dict[str, Any]) -> bytes:
    if node.get("content_encoding") == "base64":
        return base64.b64decode(str(node["content"]).encode("ascii"), validate=True)
    return str(node["content"]).encode("utf-8")


def projection_of(node: dict[str, Any]) -> dict[str, Any]:
    """The normative IPCF projection; nodes written before it keep their own (version 1)."""
    if node["projection_version"] == PROJECTION_V2:
        return projection_v2(node)
    return {
        "projection_version": node["projection_version"],
        "step_id": node["step_id"],
        "content": {
            "summary": unicodedata.normalize("NFC", node["summary"]),
            "payload": unicodedata.normalize("NFC", node["content"]),
        },
        "identifiers": sorted(node["identifiers"]),
        "files": sorted(node["files"]),
        "commands": sorted(node["commands"]),
        "errors": sorted(node["errors"]),
        "intents": sorted(node["intents"]),
        "policy_sha256": node["policy_sha256"],
    }


def artifact_sha256_of(node: dict[str, Any]) -> str:
    return canonical_sha256({k: v for k, v in node.items() if k != "artifact_sha256"})


def build_node(
    *,
    session_id: str,
    step_id: int,
    summary: str,
    payload: bytes,
    policy_sha256: str,
    intents: list[str] | None = None,
    refs: list[int] | None = None,
    index_text: str | None = None,
    extra_commands: tuple[str, ...] = (),
    source: dict[str, Any] | None = None,
    token_counter: Any = None,
    readable: str | None = None,
) -> dict[str, Any]:
    """Scrub, extract terms, count tokens and compute the three identities of one step."""
    from contextfork.tokens import count_tokens

    counter = token_counter or count_tokens
    redactions: list[dict[str, object]] = []
    try:
        text: str | None = payload.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        clean, found = redact_text(text)
        redactions.extend({"field": "content", **r.to_json()} for r in found)
        content, encoding = clean, "utf-8"
    else:
        content, encoding = base64.b64encode(payload).decode("ascii"), "base64"
    clean_summary, s_found = redact_text(summary)
    if readable is not None:
        readable, r_found = redact_text(readable)
        redactions.extend({"field": "readable", **r.to_json()} for r in r_found)
    redactions.extend({"field": "summary", **r.to_json()} for r in s_found)
    if index_text is not None:
        index_text, _ = redact_text(index_text)
    basis = (
        index_text
        if index_text is not None
        else (clean_summary + "\n" + (content if encoding == "utf-8" else ""))
    )
    ext: Extracted = extract(basis, extra_commands=extra_commands)
    index_terms = list(ext.all_terms())[:MAX_IDENTIFIERS]
    normative = normative_terms(clean_summary, content if encoding == "utf-8" else "")
    own_refs = sorted({r for r in (refs or []) + step_refs(clean_summary) if 0 < r < step_id})
    node: dict[str, Any] = {
        "ipcf_version": IPCF_VERSION,
        "node_version": NODE_VERSION,
        "session_id": session_id,
        "step_id": step_id,
        "step_key": step_key(step_id),
        "summary": clean_summary,
        "content": content,
        "content_encoding": encoding,
        "payload_bytes": len(content.encode("utf-8")) if encoding == "utf-8" else len(payload),
        # The projection's four lists (the specification's extraction), then our index terms.
        "identifiers": normative["identifiers"],
        "files": normative["files"],
        "commands": normative["commands"],
        "errors": normative["errors"],
        "index_terms": index_terms,
        "index_files": list(ext.files),
        "index_commands": list(ext.commands),
        "index_errors": list(ext.errors),
        "intents": sorted({normalize(i).strip() for i in (intents or []) if i.strip()}),
        "refs": own_refs,
        "token_count": counter(content),
        # What page-in shows (tool, arguments, result text, the assistant's words), when the
        # fold knew the step's structure; the raw bytes above stay for byte-exact restore.
        **({"readable": readable, "readable_token_count": counter(readable)} if readable else {}),
        "summary_token_count": counter(clean_summary),
        "tokenizer": "o200k_base",
        "sanitized": True,
        "redactions": redactions,
        "projection_version": PROJECTION_V2,
        "policy_sha256": policy_sha256,
        "source": source or {"kind": "cli"},
    }
    node["payload_sha256"] = sha256_bytes(payload_bytes_of(node))
    node["projection_sha256"] = canonical_sha256(projection_of(node))
    node["artifact_sha256"] = artifact_sha256_of(node)
    return node


def node_bytes(node: dict[str, Any]) -> bytes:
    """The exact file bytes of a node: canonical JSON plus a newline (deterministic)."""
    return canonical_json(node) + b"\n"


def verify_node(raw: bytes, *, where: str, step_id: int | None = None) -> dict[str, Any]:
    """Parse a node file and re-verify every identity; IntegrityError on any mismatch."""
    try:
        node = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise IntegrityError(
            f"{where}: not valid JSON ({err})", hint="run `contextfork fold validate`"
        ) from err
    if not isinstance(node, dict):
        raise IntegrityError(f"{where}: not a cold node object")
    try:
        if step_id is not None and node["step_id"] != step_id:
            raise IntegrityError(f"{where}: holds step {node['step_id']}, expected {step_id}")
        payload = payload_bytes_of(node)
        if sha256_bytes(payload) != node["payload_sha256"] or len(payload) != node["payload_bytes"]:
            raise IntegrityError(
                f"{where}: payload_sha256 does not match the stored bytes (tampered)"
            )
        if canonical_sha256(projection_of(node)) != node["projection_sha256"]:
            raise IntegrityError(f"{where}: projection_sha256 does not match (tampered)")
        if artifact_sha256_of(node) != node["artifact_sha256"]:
            raise IntegrityError(f"{where}: artifact_sha256 does not match (tampered)")
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, IntegrityError):
            raise
        raise IntegrityError(f"{where}: malformed cold node ({err!s})") from err
    return node
