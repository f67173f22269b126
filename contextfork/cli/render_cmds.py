"""``contextfork render`` and ``contextfork replay`` (thin: parse, call, emit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, console, emit, guarded, print_table
from contextfork.envelope import Result
from contextfork.errors import UsageError

TranscriptOpt = Annotated[Path, typer.Option("--transcript", help="A recorded session file.")]
KOpt = Annotated[int, typer.Option("--k", help="Boundary period k: b_t = max(0, k·⌊(t−k)/k⌋).")]


def _replay_table(result: Result) -> None:
    from rich.table import Table

    data: dict[str, Any] = result.data
    card = data["price_card"]
    table = Table(title=f"replay · {Path(data['transcript'] or '').name} · {data['steps']} steps")
    for col in ("policy", "prompt", "×native", "×base", "cached", "writes", "peak", "rewr/app",
                "epochs", "cost $", "$ ×native", "ms/step", "carriage"):
        table.add_column(col, justify="right", no_wrap=True)

    def ratio(v: float | None) -> str:
        return "" if v is None else f"{v:.3f}"

    for p in data["policies"]:
        table.add_row(
            p["policy"], f"{p['prompt_tokens']:,}", ratio(p["ratio_to_native"]),
            ratio(p["ratio_to_base"]), f"{p['cached_share']:.3f}",
            f"{p['cache_write_tokens'] + p['fresh_tokens']:,}",
            f"{p['peak_prompt']:,}", f"{p['rewrites']}/{p['appends']}",
            str(p["epochs"]), f"{p['cost_usd']:.4f}", ratio(p["cost_ratio_to_native"]),
            f"{p['render_ms_median']:.3f}", ratio(p["carriage"]),
        )
    c = console()
    print_table(c, table)
    h = data["harness"]
    c.print(f"tokens are the harness's: {h['overhead_tokens']:,} overhead + {h['scale']} × "
            f"rendered o200k tokens ({h['source']}); window {data['window_tokens']:,} "
            f"({data['window_source']})")
    rec = data.get("native_recorded")
    if rec:
        c.print(f"native as recorded: {rec['prompt_tokens']:,} prompt tokens, "
                f"${rec['cost_usd']:.4f} prompt side, ${rec['bill_usd']:.4f} with output")
    write = card["cache_write_per_mtok"]
    c.print(f"price card {card['name']}: input ${card['input_per_mtok']}/Mtok, cache read "
            f"${card['cache_read_per_mtok']}/Mtok, cache write "
            + (f"${write}/Mtok" if write is not None else "none (implicit cache)")
            + f", TTL {card['ttl_seconds']} s ({card['note']})")
    if data.get("decisions_revision") is not None:
        c.print(f"the agent's curation (revision {data['decisions_revision']}) is honoured by "
                "every policy but native")
    if data.get("plot"):
        c.print(f"plot written to {data['plot']}")


def register(app: typer.Typer) -> None:
    @app.command("render")
    @guarded("render")
    def render_cmd(
        transcript: TranscriptOpt,
        step: Annotated[int | None, typer.Option("--step", help="Step t (default: next).")] = None,
        k: KOpt = 3,
        policy: Annotated[str, typer.Option("--policy", help="native|base|refold|epoch|mask|compact")]
        = "refold",
        restore: Annotated[int | None, typer.Option("--restore", help="Answer `restore STEP`.")]
        = None,
        peek: Annotated[str | None, typer.Option("--peek", help="Answer `peek FOLD` (F<n>|N).")]
        = None,
        offset: Annotated[int, typer.Option("--offset", help="peek: byte offset.")] = 0,
        nbytes: Annotated[int, typer.Option("--bytes", help="peek: byte count.")] = 4000,
        repo: RepoOpt = None,
        session: Annotated[str | None, typer.Option(
            "--session", help="Cold store session (default: the transcript's id); "
            "originals go to <repo>/.contextfork/cold/<session>-render.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """The prompt the model should get at step t, and what was removed.

        Originals of earlier steps are stored in the repo's cold store; --restore/--peek are
        answered from there, SHA-256 verified."""
        from contextfork.render.commands import render_command
        from contextfork.render.restore import Request

        if restore is not None and peek is not None:
            raise UsageError("use --restore or --peek, not both")
        req = None
        if restore is not None:
            req = Request("restore", str(restore))
        elif peek is not None:
            req = Request("peek", peek, offset, nbytes)
        emit(render_command(transcript, step, k, policy, req, repo=repo, session_id=session),
             as_json)

    @app.command("replay")
    @guarded("replay")
    def replay_cmd(
        transcript: TranscriptOpt,
        policy: Annotated[str, typer.Option("--policy", help="Comma-separated policies.")]
        = "native,base,refold,epoch,mask,compact",
        price_card: Annotated[Path | None, typer.Option("--price-card", help="Price card JSON.")]
        = None,
        k: KOpt = 3,
        budget: Annotated[int | None, typer.Option("--budget", help="epoch token budget.")]
        = None,
        plot: Annotated[Path | None, typer.Option("--plot", help="out.svg | out.html")] = None,
        ttl: Annotated[int | None, typer.Option(
            "--ttl", help="Prompt cache TTL in seconds (300 = Anthropic's default, 3600 = the "
            "1-hour cache; default: what the recorded usage shows, else 300).")] = None,
        repo: RepoOpt = None,
        session: Annotated[str | None, typer.Option(
            "--session", help="Whose curation (pins, briefs, boundary) to honour (default: the "
            "transcript's id).")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Render every step under each policy and print the bill against what the harness
        really sent (native): tokens, cache reads and writes, cost, carriage."""
        from rich.progress import Progress as RichProgress

        from contextfork.render.commands import replay_command

        if plot is not None:
            from contextfork.render.plot import check_plot_path

            check_plot_path(plot)
        with RichProgress(transient=True, disable=as_json, console=console()) as bar:
            task = bar.add_task("replaying", total=None)
            done = [0]

            def start(total: int) -> None:
                bar.update(task, total=total)

            def tick(name: str, _n: int, _of: int) -> None:
                done[0] += 1
                bar.update(task, completed=done[0], description=f"replay {name}")

            result = replay_command(transcript, policy, price_card, k, budget, tick, plot, start,
                                    ttl=ttl, repo=repo, session_id=session)
        emit(result, as_json, _replay_table)
