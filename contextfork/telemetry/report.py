"""Human rendering of the status report (from its JSON data, so both outputs say the same)."""

from __future__ import annotations

from typing import Any

from contextfork.telemetry.policy import format_tokens

_MAX_FILES = 12
_MAX_FAILURES = 8


def _n(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else "?"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, _ = divmod(rem, 60)
    return f"{h}h {m:02d}m" if h else f"{m}m {s % 60:02d}s"


def _one_line(text: str, limit: int = 110) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _session_lines(d: dict[str, Any]) -> list[str]:
    sess, tok, steps = d["session"], d["tokens"], d["steps"]
    out = [d["risk"]["badge"], "", "CONTEXT METRICS"]
    src = tok["source"]
    how = {
        "recorded": "recorded by the harness (last model call since the last compaction)",
        "counted": "counted offline with o200k_base (no call of this session recorded yet)",
        "estimated": "estimated at 4 chars/token (no tokenizer)",
        "none": "nothing to count",
    }[src]
    total = tok["total"]
    window = ""
    if tok.get("context_window"):
        window = f" of {format_tokens(tok['context_window'])} ({tok['context_used_percent']}%)"
    out.append(f"  Context tokens    {_n(total)}{window}  [source: {src}: {how}]")
    b = tok["breakdown"]
    scaled = " (scaled to the recorded total)" if tok["scaled_to_recorded"] else ""
    out.append(f"    system prompt   {_n(b['system_prompt'])}{scaled}")
    out.append(f"    user history    {_n(b['user_history'])}")
    out.append(f"    assistant       {_n(b['assistant_history'])}")
    out.append(f"    tool outputs    {_n(b['tool_outputs'])}")
    fork = (
        f"{steps['since_fork']} since the fork, {steps['total']} over the chain"
        if steps.get("since_fork") is not None
        else str(steps["total"])
    )
    out.append(
        f"  Steps             {fork} ({steps['since_compaction']} since last "
        f"compaction), {steps['tool_calls']} tool calls, {steps['tool_errors']} tool errors"
    )
    out.append(
        f"  Session           {sess['format']} {sess.get('session_id') or ''}  "
        f"age {_age(sess.get('age_seconds'))}  model {sess.get('model') or '?'}"
    )
    files = d["touched_files"]
    shown = ", ".join(files[:_MAX_FILES]) + (" …" if len(files) > _MAX_FILES else "")
    out.append(f"  Touched files     {len(files)}{': ' + shown if files else ''}")
    fails = d["failed_commands"]
    out.append(f"  Failed commands   {len(fails)}")
    for f in fails[-_MAX_FAILURES:]:
        code = f" (exit {f['exit_code']})" if f.get("exit_code") is not None else ""
        out.append(f"    step {f['step']} {f['tool']}{code}: {_one_line(f['command'], 70)}")
        out.append(f"      → {_one_line(f['error_excerpt'])}")
    comps = d["compactions"]
    desc = "; ".join(
        f"{c.get('trigger') or '?'} before step {c['before_step']}"
        + (f" at {format_tokens(c['pre_tokens'])}" if c.get("pre_tokens") else "")
        for c in comps
    )
    out.append(f"  Compactions       {len(comps)}{': ' + desc if comps else ''}")
    bill = d["billing"]
    out.append(
        f"  Billing ({bill['method']})  input {_n(bill['input_tokens'])} · output "
        f"{_n(bill['output_tokens'])} · cache write {_n(bill['cache_creation_input_tokens'])} · "
        f"cache read {_n(bill['cache_read_input_tokens'])}"
    )
    if d.get("proxy"):
        out += _proxy_lines(d["proxy"])
    r = d["risk"]
    why = f"  ({'; '.join(r['reasons'])})" if r["reasons"] else ""
    out.append("")
    out.append(f"RISK  {r['level']} ({r['color']}) → {r['recommendation']}{why}")
    return out


def _proxy_lines(p: dict[str, Any]) -> list[str]:
    """What the proxy really sent (contextfork run): the API's own counts, the saving."""
    last = ""
    if p.get("last_sent_tokens"):
        last = f"; last call {format_tokens(p['last_sent_tokens'])} sent"
        if p.get("last_unfolded_tokens"):
            last += f" (~{format_tokens(p['last_unfolded_tokens'])} unfolded)"
    saving = f", {100 * p['saving']:.0f}% of the bytes saved" if p.get("saving") else ""
    out = [f"  Proxy             {p['requests']} calls: {p['edited']} folded, "
           f"{p['as_sent']} as sent, {p['passed_through']} passed through{saving}{last}"]
    if p.get("cached_share") is not None:
        out.append(f"    prompt tokens   {_n(p['prompt_tokens'])} (API usage), "
                   f"{100 * p['cached_share']:.0f}% read from the cache")
    if p.get("budget_tokens"):
        out.append(f"    band            folds at {format_tokens(int(0.8 * p['budget_tokens']))} "
                   f"down to {format_tokens(int(0.4 * p['budget_tokens']))} (estimated message "
                   "tokens; policy.json proxy.budget_tokens)")
    for reason, n in sorted(p.get("passed_reasons", {}).items()):
        out.append(f"    passed through  {n} × {reason}")
    return out


def _git_lines(g: dict[str, Any]) -> list[str]:
    where = "detached HEAD" if g["detached"] else (g["branch"] or "?")
    head = (g["head"] or "unborn")[:12]
    state = (
        f"{g['staged']} staged, {g['modified']} modified, {g['deleted']} deleted, "
        f"{g['renamed']} renamed, {g['untracked']} untracked"
        + (f", {g['conflicts']} conflicts" if g["conflicts"] else "")
    )
    out = [f"GIT   {g['root']}: {where} @ {head}; {state if g['dirty'] else 'clean'}"]
    pkg = g.get("latest_package")
    if pkg:
        verdict = "valid" if pkg["valid"] else f"INVALID ({pkg['errors']} errors)"
        out.append(f"      latest package {pkg['package_id']}: {verdict}")
    else:
        out.append("      no handoff package yet (contextfork export)")
    return out


def render_text(d: dict[str, Any]) -> str:
    lines: list[str] = []
    if d.get("session"):
        lines += _session_lines(d)
    if d.get("git"):
        lines += ([""] if lines else []) + _git_lines(d["git"])
    pol = d["policy"]
    t, s = pol["policy"]["tokens"], pol["policy"]["steps"]
    lines.append(
        f"POLICY {pol['source']}: tokens {_n(t['warning'])}/{_n(t['fork'])}"
        f"{' hard ' + _n(t['hard_limit']) if t.get('hard_limit') else ''}, "
        f"steps {s['warning']}/{s['fork']}"
    )
    for note in d.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"
