"""CLI: ``contextfork view`` (the session and package inspector)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextfork.cli.common import JsonOpt, RepoOpt, emit, guarded


def register(app: typer.Typer) -> None:
    @app.command("view")
    @guarded("view")
    def view(
        transcript: Annotated[Path | None, typer.Option(help="Session transcript to show.")] = None,
        session: Annotated[
            str | None, typer.Option(help="Claude Code session id of this project (instead of --transcript).")
        ] = None,
        out: Annotated[
            Path | None, typer.Option(help="Where to write the site (default: .contextfork/view/).")
        ] = None,
        replay: Annotated[
            bool, typer.Option(help="Include the replay bill page (renders every step under each policy: seconds).")
        ] = False,
        serve: Annotated[
            bool, typer.Option(help="Serve it on 127.0.0.1 and rebuild when the transcript grows.")
        ] = False,
        host: Annotated[str, typer.Option(help="Address for --serve (loopback only by default).")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="Port for --serve (0: any free port).")] = 8765,
        allow_remote: Annotated[
            bool, typer.Option(help="Let --host be a non-loopback address.")
        ] = False,
        open_: Annotated[bool, typer.Option("--open", help="Open it in a browser.")] = False,
        repo: RepoOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Write the session and package inspector: a self-contained static site."""
        from contextfork.view import api

        if serve:
            api.check_host(host, allow_remote)
        result = api.view(repo=repo, transcript=transcript, session=session, out=out,
                          with_replay=replay)  # fmt: skip
        if not serve:
            if open_:
                import webbrowser

                webbrowser.open(Path(result.data["index"]).as_uri())
            emit(result, json)
            return
        _serve(result.data, host, port, open_, replay, repo, transcript, session, out)


def _serve(
    data: dict[str, object], host: str, port: int, open_: bool, replay: bool,
    repo: Path | None, transcript: Path | None, session: str | None, out: Path | None,
) -> None:  # fmt: skip
    from contextfork.view import api
    from contextfork.view.serve import Rebuilder, make_server, url_of

    watch = [Path(str(data["transcript"]))] if data.get("transcript") else []

    def rebuild() -> object:
        return api.view(repo=repo, transcript=transcript, session=session, out=out,
                        with_replay=replay)  # fmt: skip

    server = make_server(Path(str(data["out"])), host, port, Rebuilder(watch, rebuild))
    url = url_of(host, int(server.server_address[1]))
    print(f"Serving {data['out']} at {url} (Ctrl-C stops it)", flush=True)
    if open_:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
