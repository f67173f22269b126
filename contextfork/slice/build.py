"""Cut one role's slice of the parent session: labelled, verified blocks within a budget.

Every block names where its bytes are and their SHA-256: a package part (``handoff.json`` or
``git_diff.patch`` of package P, checked against its manifest), a folded step of the cold store
(``step N``, its ``payload_sha256``, re-verified on read), or the parent's live transcript
(the byte span of the lines, and the SHA-256 of exactly those bytes — and the folded step that
holds them when the session has a store). A role lists its sections in order; whole blocks are
taken in that order while they fit, and the rest is named (step ids to peek) instead of shown.
The text never exceeds the budget. Stdlib only on this path (the SubagentStart hook runs it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contextfork.hashing import sha256_bytes
from contextfork.slice import roles as R
from contextfork.slice import workblocks as WB
from contextfork.slice import workset as W
from contextfork.slice.live import AGENT_TOOLS, Call, LiveView, task_text
from contextfork.slice.sources import Package, Store

EXCERPT = 1_200
# A label gives the first LABEL_HEX hex digits of a SHA-256 (48 bits: enough to check bytes
# against, and a label costs ~40 characters, not ~60: a slice holds 30 or more of them)
LABEL_HEX = 12
RESERVE = 250  # chars kept for the line that names what was left out
COMMAND_LIST = 24  # the commands section: at most this many (a list that does not fit is cut)
FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "NotebookRead")
WRITE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch")
SHELL_TOOLS = ("Bash", "exec_command", "shell", "local_shell")
_TEST_CMD = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|go test|cargo test|mix test|"
    r"npm (run )?test|pnpm (run )?test|yarn test|make (check|test)|rspec|phpunit|ctest)\b"
)
_TEST_FILE = re.compile(r"(^|/)(tests?/|test_[^/]+$|[^/]+_test\.[a-z]+$|[^/]+\.(test|spec)\.[a-z]+$)")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)


class Block:
    __slots__ = ("label", "ref", "section", "text")

    def __init__(self, section: str, text: str, label: str, ref: dict[str, Any]) -> None:
        self.section = section
        self.text = text
        self.label = label
        self.ref = ref  # where the bytes are: {"kind", "sha256", "step"?, "package"?, "lines"?}

    def render(self) -> str:
        return f"[{self.label}]\n{self.text.rstrip()}\n"


def _cut(text: str, n: int = EXCERPT) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 40] + f"\n…(+{len(text) - n + 40} chars)"


class Cutter:
    """Builds the blocks of each section from the three sources."""

    def __init__(self, live: LiveView, store: Store | None, pkg: Package | None, task: str,
                 budget: int = R.DEFAULT_BUDGET) -> None:  # fmt: skip
        self.live, self.store, self.pkg, self.task, self.budget = live, store, pkg, task, budget
        self.session = store.session_id if store else None
        self.shown_commands: set[str] = set()  # the working set's commands (named once)
        # file offset → the folded step holding that line (lines follow their step's key line)
        self._marks: list[tuple[int, int]] = []
        if store is not None and store.ok:
            for off, uid in live.line_uuids:
                step = store.step_of_uuid(uid)
                if step is not None:
                    self._marks.append((off, step))

    # -- labels
    def _step_at(self, offset: int) -> int | None:
        found = None
        for off, step in self._marks:
            if off > offset:
                break
            found = step
        return found

    def live_ref(self, call: Call) -> tuple[str, dict[str, Any]]:
        end = call.result_span[1] if call.result_span else call.span[1]
        span = (call.span[0], max(end, call.span[1]))
        if call.result_span and call.result_span[0] < call.span[0]:
            span = (call.result_span[0], call.span[1])
        sha = sha256_bytes(self.live.bytes_of(span))
        ref: dict[str, Any] = {"kind": "live", "bytes": list(span), "sha256": sha}
        step = self._step_at(call.span[0])
        label = f"bytes {span[0]}-{span[1]} sha256 {sha[:LABEL_HEX]}"
        if step is not None and self.store is not None:
            ref["step"] = step
            ref["payload_sha256"] = self.store.sha.get(step)
            label = f"step {step} payload {str(ref['payload_sha256'])[:LABEL_HEX]} · {label}"
        return label, ref

    def pkg_ref(self, part: str) -> tuple[str, dict[str, Any]]:
        assert self.pkg is not None
        sha = self.pkg.handoff_sha if part == "handoff.json" else str(self.pkg.diff_sha)
        return (f"package {self.pkg.package_id} {part} sha256 {sha[:LABEL_HEX]}",
                {"kind": "package", "package": self.pkg.package_id, "part": part, "sha256": sha})  # fmt: skip

    def _pkg_block(self, section: str, text: str, part: str = "handoff.json") -> list[Block]:
        # a placeholder is what the machine could not know: it never reaches a subagent
        text = "\n".join(line for line in text.splitlines() if "[[unfilled:" not in line)
        if not text.strip() or text.strip() in ("Goal:",):
            return []
        label, ref = self.pkg_ref(part)
        return [Block(section, text, label, ref)]

    def _call_block(self, section: str, call: Call, text: str) -> Block:
        label, ref = self.live_ref(call)
        return Block(section, text, label, ref)

    # -- helpers on calls
    def files_of(self, call: Call) -> list[str]:
        out = []
        for key in ("file_path", "notebook_path", "path"):
            v = call.input.get(key)
            if isinstance(v, str) and v:
                out.append(v)
        if call.name == "apply_patch" or "*** Begin Patch" in str(call.input.get("input", "")):
            out += _PATCH_FILE.findall(str(call.input.get("input", "")))
        return out

    def command_of(self, call: Call) -> str | None:
        if call.name not in SHELL_TOOLS:
            return None
        v = call.input.get("command", call.input.get("cmd"))
        if isinstance(v, list):
            v = " ".join(str(x) for x in v)
        return v if isinstance(v, str) and v else None

    def describe(self, call: Call, result_chars: int = EXCERPT) -> str:
        cmd = self.command_of(call)
        if cmd is not None:
            head = f"$ {cmd}"
        elif call.name in FILE_TOOLS or self.files_of(call):
            rng = ""
            if isinstance(call.input.get("offset"), int) or isinstance(call.input.get("limit"), int):
                start = int(call.input.get("offset") or 1)
                rng = f" lines {start}-{start + int(call.input.get('limit') or 0)}"
            head = f"{call.name} {', '.join(self.files_of(call))}{rng}"
            if call.name in ("Edit", "MultiEdit"):
                old = str(call.input.get("old_string", ""))[:300]
                new = str(call.input.get("new_string", ""))[:300]
                head += f"\n- {old}\n+ {new}" if old or new else ""
        else:
            head = f"{call.name} {_cut(str(call.input), 300)}"
        status = " (failed)" if call.is_error else ""
        if not (call.result and result_chars):
            body = ""
        else:  # a command's verdict is at the end of its output; a file's content from the top
            body = W.excerpt_tail(call.result, result_chars) if cmd is not None else _cut(call.result, result_chars)
        return f"{head}{status}\n{body}" if body else head + status

    # -- sections
    def sec_task(self) -> list[Block]:
        out: list[Block] = []
        if self.store is not None and self.task:
            shown, _left = self.store.page_in(self.task, 4_000)
            for s in shown:
                label = (f"step {s['step_id']} of session {self.store.session_id} payload "
                         f"{str(s['sha256'])[:LABEL_HEX]} ({s['mode']})")  # fmt: skip
                ref = {"kind": "store", "step": s["step_id"], "sha256": s["sha256"],
                       "session": self.store.session_id}  # fmt: skip
                out.append(Block("task", str(s["block"]), label, ref))
        return out

    def sec_goal(self) -> list[Block]:
        if self.pkg is None:
            return []
        g = self.pkg.handoff.get("active_goal") or {}
        crit = [c for c in g.get("acceptance_criteria") or [] if isinstance(c, str)]
        text = f"Goal: {g.get('goal', '')}" + "".join(f"\n- done when: {c}" for c in crit)
        return self._pkg_block("goal", text)

    def sec_decisions(self) -> list[Block]:
        if self.pkg is None:
            return []
        lines = []
        for d in self.pkg.handoff.get("settled_decisions") or []:
            if isinstance(d, dict) and d.get("decision"):
                rej = ", ".join(str(r) for r in d.get("rejected_alternatives") or [])
                lines.append(f"- {d['decision']}" + (f" (rejected: {rej})" if rej else ""))
        return self._pkg_block("decisions", "\n".join(lines))

    def sec_risks(self) -> list[Block]:
        if self.pkg is None:
            return []
        lines = [f"- {r['risk']}" + (f" (mitigation: {r['mitigation']})" if r.get("mitigation") else "")
                 for r in self.pkg.handoff.get("open_risks") or [] if isinstance(r, dict) and r.get("risk")]  # fmt: skip
        return self._pkg_block("risks", "\n".join(lines))

    def sec_next_action(self) -> list[Block]:
        if self.pkg is None:
            return []
        n = self.pkg.handoff.get("next_action") or {}
        text = str(n.get("action", "")) + (f"\n$ {n['command']}" if n.get("command") else "")
        return self._pkg_block("next_action", text)

    def sec_do_not_retry(self) -> list[Block]:
        out: list[Block] = []
        if self.pkg is not None:
            lines = [f"- {f.get('approach')} → do not: {f.get('barred_action')}"
                     for f in self.pkg.handoff.get("failed_approaches") or [] if isinstance(f, dict)]  # fmt: skip
            out += self._pkg_block("do_not_retry", "\n".join(lines))
        seen: set[str] = set()
        for call in reversed(self.live.calls):
            if not call.is_error:
                continue
            key = self.command_of(call) or f"{call.name} {self.files_of(call)}"
            if key in seen:
                continue
            seen.add(key)
            out.append(self._call_block("do_not_retry", call, self.describe(call, 400)))
            if len(seen) >= 6:
                break
        return out

    def _touched(self) -> list[str]:
        files: list[str] = []
        for call in reversed(self.live.calls):
            if call.name in WRITE_TOOLS or (call.name not in ("Read", "NotebookRead") and self.files_of(call)):
                files += [f for f in self.files_of(call) if f not in files]
        if self.pkg is not None:
            files += [f for f in self.pkg.handoff.get("touched_files") or [] if isinstance(f, str) and f not in files]
        return files

    def sec_files_touched(self) -> list[Block]:
        out: list[Block] = []
        files = self._touched()
        if not files:
            return out
        if self.pkg is not None and self.pkg.handoff.get("touched_files"):
            label, ref = self.pkg_ref("handoff.json")
        else:
            writes = [c for c in self.live.calls if c.name in WRITE_TOOLS]
            if not writes:
                return out
            label, ref = self.live_ref(writes[-1])
            label = "live transcript: file paths of the parent's edit calls · newest " + label
        ref["list"] = True
        return [Block("files_touched", "\n".join(f"- {f}" for f in files[:40]), label, ref)]

    def sec_diff_summary(self) -> list[Block]:
        if self.pkg is None or not self.pkg.diff:
            return []
        stats: dict[str, list[int]] = {}
        cur = None
        for line in self.pkg.diff.decode("utf-8", "replace").splitlines():
            if line.startswith("diff --git "):
                cur = line.split(" b/", 1)[-1]
                stats[cur] = [0, 0]
            elif cur and line.startswith("+") and not line.startswith("+++"):
                stats[cur][0] += 1
            elif cur and line.startswith("-") and not line.startswith("---"):
                stats[cur][1] += 1
        text = "\n".join(f"{p} +{a} -{d}" for p, (a, d) in stats.items())
        return self._pkg_block("diff_summary", text, "git_diff.patch")

    def sec_recent_work(self) -> list[Block]:
        out: list[Block] = []
        for call in reversed(self.live.calls):
            if call.name in AGENT_TOOLS or (call.name not in FILE_TOOLS and self.command_of(call) is None
                                            and not self.files_of(call)):  # fmt: skip
                continue
            out.append(self._call_block("recent_work", call, self.describe(call, 800)))
            if len(out) >= 12:
                break
        return out

    def sec_failures_on_files(self) -> list[Block]:
        files = set(self._touched()[:20])
        out = []
        for call in reversed(self.live.calls):
            if call.is_error and (set(self.files_of(call)) & files or any(
                    f in (self.command_of(call) or "") for f in files)):  # fmt: skip
                out.append(self._call_block("failures_on_files", call, self.describe(call, 600)))
        return out[:6]

    def sec_test_runs(self) -> list[Block]:
        latest: dict[str, Call] = {}
        for call in self.live.calls:
            cmd = self.command_of(call)
            if cmd and _TEST_CMD.search(cmd):
                latest.pop(cmd, None)
                latest[cmd] = call
        calls = sorted(latest.values(), key=lambda c: not c.is_error)
        return [self._call_block("test_runs", c, self.describe(c, 700)) for c in calls[:6]]

    def sec_files_under_test(self) -> list[Block]:
        files: list[str] = []
        last: Call | None = None
        for call in reversed(self.live.calls):
            found = [f for f in self.files_of(call) if _TEST_FILE.search(f)]
            cmd = self.command_of(call) or ""
            found += [w for w in cmd.split() if (_TEST_FILE.search(w) and "/" in w) or w.startswith("test_")]
            for f in found:
                if f not in files:
                    files.append(f)
                    last = last or call
        if not files or last is None:
            return []
        label, ref = self.live_ref(last)
        ref["list"] = True
        return [Block("files_under_test", "\n".join(f"- {f}" for f in files[:30]),
                      "live transcript: test files of the parent's calls · newest " + label, ref)]  # fmt: skip

    def _list_block(self, section: str, lines: list[str], newest: Call, what: str) -> list[Block]:
        """Names only, one block: labelled with the newest call the list was read from."""
        if not lines:
            return []
        label, ref = self.live_ref(newest)
        ref["list"] = True
        return [Block(section, "\n".join(lines), f"live transcript: {what} · newest {label}", ref)]

    def sec_commands(self) -> list[Block]:
        """Each shell command the parent ran (newest first, once), its status and first line."""
        lines: list[str] = []
        seen: set[str] = set(self.shown_commands)  # shown with their output already
        newest: Call | None = None
        for call in reversed(self.live.calls):
            cmd = self.command_of(call)
            if cmd is None or " ".join(cmd.split()) in seen:
                continue
            seen.add(" ".join(cmd.split()))
            newest = newest or call
            first = next((ln for ln in call.result.splitlines() if ln.strip()), "")[:100]
            status = "failed" if call.is_error else "ok"
            lines.append(f"$ {_cut(cmd, 200)} → {status}: {first}")
            if len(lines) >= COMMAND_LIST:
                break
        return self._list_block("commands", lines, newest, "the parent's shell commands") if newest else []

    def sec_reads(self) -> list[Block]:
        lines: list[str] = []
        newest: Call | None = None
        for call in reversed(self.live.calls):
            if call.name not in ("Read", "NotebookRead", "Grep", "Glob"):
                continue
            what = self.describe(call, 0)
            if what in lines:
                continue
            newest = newest or call
            lines.append(what)
            if len(lines) >= 15:
                break
        return self._list_block("reads", lines, newest, "the parent's reads and searches") if newest else []

    def sec_working_files(self) -> list[Block]:
        return WB.working_files(self)

    def sec_command_outputs(self) -> list[Block]:
        return WB.command_outputs(self)

    def sec_working_set(self) -> list[Block]:
        return WB.working_set(self)


def _head_of_list(b: Block, room: int) -> Block:
    """A list of names that does not fit whole: its first lines that do, the rest counted."""
    lines = b.text.split("\n")
    keep: list[str] = []
    for line in lines:
        if sum(len(x) + 1 for x in keep) + len(line) + 1 + 20 > room:
            break
        keep.append(line)
    if not keep:
        return b
    return Block(b.section, "\n".join([*keep, f"…(+{len(lines) - len(keep)} more)"]), b.label, {**b.ref, "cut": True})


def assemble(blocks: list[Block], head: str, budget: int, session: str | None) -> tuple[str, list[Block], list[Block]]:
    """Whole blocks in order while they fit; the rest named (peek-able when folded)."""
    if len(head) > budget:
        return "", [], blocks
    shown: list[Block] = []
    left: list[Block] = []
    used = len(head)
    reserve = min(RESERVE, budget // 10)  # for the line that names what was left out
    section = None
    parts = [head]
    for b in blocks:
        title = f"## {b.section}\n" if b.section != section else ""
        text = title + b.render()
        if used + len(text) + reserve > budget and b.ref.get("list"):
            b = _head_of_list(b, budget - used - reserve - len(title) - len(b.label) - 4)
            text = title + b.render()
        if used + len(text) + reserve <= budget:
            parts.append(text)
            used += len(text)
            shown.append(b)
            section = b.section
        else:
            left.append(b)
    if left:
        names = []
        for b in left:
            step = b.ref.get("step")
            names.append(f"step {step}" if step is not None else b.label.split(" · ")[0])
        uniq = list(dict.fromkeys(names))
        tail = "Not shown (over the budget): " + "; ".join(uniq)
        where = f" (read with `contextfork fold show STEP --session {session}`)" if session else ""
        tail = tail + where + ".\n"
        room = budget - used
        if len(tail) > room:
            tail = tail[: max(0, room - 2)] + "…\n" if room > 40 else ""
        parts.append(tail)
    text = "".join(parts)
    return text[:budget], shown, left


def cut(live: LiveView, store: Store | None, pkg: Package | None, role: R.Role, *,
        agent_type: str | None, session: str | None, task: str) -> dict[str, Any]:  # fmt: skip
    """The slice: its text (≤ role.budget, and ≤ a tenth of the parent's recorded context but
    never below ``CONTEXT_FLOOR``) and what each block is."""
    if live.context_tokens:
        cap = max(R.CONTEXT_FLOOR, int(live.context_tokens * R.CONTEXT_SHARE))
        role = R.Role(role.name, role.sections, min(role.budget, cap))
    cutter = Cutter(live, store, pkg, task, role.budget)
    blocks: list[Block] = []
    seen: set[str] = set()
    for section in role.sections:
        for b in getattr(cutter, f"sec_{section}")():
            # one call is shown once (its first section wins); a list of names is its own block
            key = b.text if b.ref.get("list") or b.ref.get("kind") != "live" else str(b.ref["bytes"])
            if key in seen:
                continue
            seen.add(key)
            blocks.append(b)
    if not blocks:
        return {"text": "", "blocks": [], "left": [], "chars": 0}
    from contextfork.redact import redact_text  # lazy: hot path (~10 ms)

    for b in blocks:  # the live view is not scrubbed on disk: a secret never reaches a subagent
        b.text, found = redact_text(b.text)
        if found:
            b.ref["redactions"] = len(found)
            b.label += f" · {len(found)} secret(s) redacted"
    who = f" (agent type {agent_type})" if agent_type else ""
    head = (f"contextfork slice of the parent session{f' {session}' if session else ''} for the "
            f"{role.name} role{who}. Each block is exact content of the parent's record; its "
            "label says where (package part, folded step and its payload SHA-256, or bytes A-B "
            "of the parent's live transcript) and the SHA-256 of those bytes (first hex digits).\n")  # fmt: skip
    if task:
        head += "Task: " + _cut(task, 300).replace("\n", " ") + "\n"
    text, shown, left = assemble(blocks, head, role.budget, session)
    return {
        "text": text,
        "chars": len(text),
        "blocks": [{"section": b.section, "label": b.label, **b.ref} for b in shown],
        "left": [{"section": b.section, "label": b.label, **b.ref} for b in left],
    }


def slice_for(root: Path | None, transcript: Path | None, role: str | None, *, agent_type: str | None,
              session: str | None, budget: int | None, task: str | None = None,
              wait: float = 0.0, agent_id: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Everything from the repository, the parent's transcript and the policy's roles."""
    from contextfork.slice import live as L
    from contextfork.slice.sources import newest_package

    slices = R.read_slices(root)
    name = role or R.role_for(agent_type, slices)
    spec = R.resolve(name, slices, budget)
    if spec is None:
        from contextfork.errors import UsageError

        raise UsageError(f"unknown role {name!r}", hint="roles: " + ", ".join(R.role_names(slices)))
    matched = "given"
    if task is None:
        view, call, matched = L.read_for_task(transcript, agent_type, wait, agent_id)
        task = task_text(call)
    else:
        view = L.read_live(transcript)
    store = Store(root, session) if root is not None and session else None
    pkg = newest_package(root, session) if root is not None else None
    out = cut(view, store, pkg, spec, agent_type=agent_type, session=session, task=task)
    return {**out, "role": spec.name, "budget": spec.budget, "agent_type": agent_type,
            "session_id": session, "task": {"matched": matched, "chars": len(task)},
            "sources": {"live_calls": len(view.calls), "store": bool(store and store.ok),
                        "package": pkg.package_id if pkg else None}}  # fmt: skip
