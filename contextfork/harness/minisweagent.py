"""A mini-swe-agent agent class that sends the rendered (ReFold) view and answers ``restore N``.

Select it with mini-swe-agent's ``agent_class`` setting
(``agent.agent_class: contextfork.harness.minisweagent.ContextforkAgent``; example config in
``examples/mini-swe-agent.yaml``). mini-swe-agent keeps its own full history in
``self.messages`` and saves it as the trajectory, untouched; only what goes to the model
changes. Before each call the originals of every finished step are stored in the cold store
(``contextfork.render.coldsource``: one node per step, idempotent), and ``restore N`` /
``peek F<n> …`` commands are answered from that store — re-verified on read and against the
sha256 recorded when the step was first folded — appended as the command's output, never run.

The store is ``render_store_dir`` when set, else ``<git root of the env's cwd>/.contextfork/
cold/mswea-<run id>-render`` (outside a git repository: ``$XDG_CACHE_HOME/contextfork/cold/...``);
the run id is random per agent, so two runs never share step ids.

Self-contained on purpose: it imports mini-swe-agent lazily-typed (no stubs) and nothing of the
other harness modules.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from minisweagent.agents.default import AgentConfig, DefaultAgent

from contextfork.cold.layout import StoreLayout, layout_at, layout_for
from contextfork.errors import ContextforkError, NotFoundError
from contextfork.layout import cache_dir
from contextfork.render.api import render
from contextfork.render.coldsource import SUFFIX, ColdSource, persist_steps
from contextfork.render.engine import View
from contextfork.render.policies import policy
from contextfork.render.restore import answer, parse_request
from contextfork.transcript.model import Block, Session, Step, TextBlock, ToolCall, ToolResult


class ContextforkAgentConfig(AgentConfig):
    render_policy: str = "refold"
    """base | refold | epoch | mask | compact (what the model is sent)."""
    render_k: int = 3
    """Boundary period k."""
    render_budget_tokens: int | None = None
    """Token budget for the epoch policy (default: contextfork's)."""
    render_adaptive: bool = True
    """False: operators act from the first boundary move (no warm-up gates, no reminder limit)."""
    render_store_dir: str | None = None
    """Cold store directory for this run's originals (default: see the module docstring)."""


def _content(msg: dict[str, Any]) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):  # multimodal parts
        return "".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return "" if c is None else str(c)


def history_to_session(messages: list[dict[str, Any]]) -> Session:
    """mini-swe-agent's message list as a normalized Session (one step per model reply)."""
    system: str | None = None
    steps: list[Step] = []
    lead: list[Block] = []
    for msg in messages:
        role = msg.get("role")
        text = _content(msg)
        if role == "system" and system is None and not steps:
            system = text
        elif role == "assistant":
            n = len(steps) + 1
            blocks: list[Block] = [*lead, TextBlock(role="assistant", text=text)]
            lead = []
            for j, action in enumerate(msg.get("extra", {}).get("actions", []) or []):
                cmd = action.get("command", "") if isinstance(action, dict) else ""
                blocks.append(ToolCall(id=f"s{n}a{j}", name="bash", input={"command": cmd}))
            steps.append(Step(index=n, blocks=blocks))
        elif role in ("user", "tool") and steps:
            extra = msg.get("extra", {}) or {}
            calls = steps[-1].tool_calls
            done = len(steps[-1].tool_results)
            if "returncode" in extra and done < len(calls):
                steps[-1].blocks.append(ToolResult(call_id=calls[done].id, content=text))
            else:
                steps[-1].blocks.append(TextBlock(role="user", text=text))
        elif role in ("user", "tool"):
            lead.append(TextBlock(role="user", text=text))
    if lead:
        steps.append(Step(index=len(steps) + 1, blocks=lead))
    return Session(format="mini-swe-agent", system_prompt=system, steps=steps)


class ContextforkAgent(DefaultAgent):
    """DefaultAgent whose model sees the rendered view of its (unchanged) full history."""

    def __init__(self, model: Any, env: Any, **kwargs: Any) -> None:
        kwargs.setdefault("config_class", ContextforkAgentConfig)
        super().__init__(model, env, **kwargs)
        self.sent: list[list[dict[str, str]]] = []
        self.last_view: View | None = None
        self._session: Session | None = None
        self.run_id = uuid.uuid4().hex[:12]
        self._layout: StoreLayout | None = None
        self._stored: set[int] = set()

    def cold_layout(self) -> StoreLayout:
        """Where this run's originals live (created on first write)."""
        if self._layout is None:
            if self.config.render_store_dir:
                self._layout = layout_at(Path(self.config.render_store_dir))
            else:
                sid = f"mswea-{self.run_id}{SUFFIX}"
                cwd = getattr(getattr(self.env, "config", None), "cwd", "") or None
                try:
                    self._layout = layout_for(Path(cwd) if cwd else None, sid)
                except NotFoundError:
                    self._layout = layout_at(cache_dir("cold", sid))
        return self._layout

    def _store_finished_steps(self, session: Session, t: int) -> None:
        done = [s.index for s in session.steps if s.index < t]
        persist_steps(self.cold_layout(), session, done, known=self._stored)

    def rendered_messages(self) -> list[dict[str, str]]:
        """The view for the next call: rendered, then merged so roles alternate."""
        session = history_to_session(self.messages)
        cfg = self.config
        pol = policy(cfg.render_policy, k=cfg.render_k, budget_tokens=cfg.render_budget_tokens,
                     adaptive=cfg.render_adaptive)
        last = max((s.index for s in session.steps), default=0)
        trailing_lead = bool(session.steps) and not any(
            not isinstance(b, TextBlock) or b.role != "user" for b in session.steps[-1].blocks
        )
        t = last if trailing_lead else last + 1
        view = render(session, t, pol)
        self._store_finished_steps(session, t)
        self.last_view = view
        self._session = session
        out: list[dict[str, str]] = []
        for m in view.messages:
            chat = m.to_chat()
            if out and out[-1]["role"] == chat["role"] and chat["role"] != "system":
                out[-1] = {
                    "role": chat["role"],
                    "content": out[-1]["content"] + "\n\n" + chat["content"],
                }
            else:
                out.append(chat)
        return out

    def query(self) -> dict[str, Any]:
        full = self.messages
        view = self.rendered_messages()
        self.sent.append(view)
        self.messages = list(view)
        try:
            message: dict[str, Any] = super().query()
        finally:
            self.messages = full
        self.messages.append(message)
        return message

    def _answer(self, command: str) -> dict[str, Any] | None:
        req = parse_request(command)
        if req is None:
            return None
        view = self.last_view
        try:
            if view is not None:
                self._store_finished_steps(history_to_session(self.messages), view.t)
            text = answer(
                req,
                ColdSource(self.cold_layout()),
                view.step_sha256 if view else {},
                view.folds if view else {},
            )
            return {"output": text + "\n", "returncode": 0, "exception_info": ""}
        except ContextforkError as err:
            return {
                "output": f"contextfork: {err.one_line()}\n",
                "returncode": 1,
                "exception_info": "",
            }

    def execute_actions(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        outputs = []
        for action in message.get("extra", {}).get("actions", []):
            answered = self._answer(str(action.get("command", "")))
            outputs.append(answered if answered is not None else self.env.execute(action))
        result: list[dict[str, Any]] = self.add_messages(
            *self.model.format_observation_messages(message, outputs, self.get_template_vars())
        )
        return result
