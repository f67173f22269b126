"""``contextfork view``: the static inspector shows every step, the cold layer, packages."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import clean_env, run_cli
from tests.view.conftest import Viewed


def test_timeline_shows_every_step_and_highlights_failed_commands(viewed: Viewed) -> None:
    from contextfork.transcript import load_session

    steps = load_session(viewed.transcript).steps
    html = viewed.html()
    shown = {int(m) for m in re.findall(r'id="step-(\d+)"', html)}
    assert shown == {s.index for s in steps}
    assert 'class="step failed' in html  # the fixture's failing npm test
    assert "<script src=\"http" not in html and "https://" not in html.split("<main")[0]


def test_folded_step_ships_exactly_the_stored_bytes_with_its_hash(viewed: Viewed) -> None:
    """The page names the hash; the bytes are in the per-node script it loads on reveal."""
    node = json.loads(viewed.node(1).read_text(encoding="utf-8"))
    html = viewed.html()
    found = re.findall(r'data-sha256="([0-9a-f]{64})" data-src="(cold/step_\d{6}\.js)"', html)
    assert found and "data-b64=" not in html
    shown = {}
    for sha, src in found:
        script = (viewed.out / src).read_text(encoding="ascii")
        m = re.fullmatch(r'window\.CF_LAZY = window\.CF_LAZY \|\| \{\};\n'
                         r'window\.CF_LAZY\["([^"]+)"\] = ("[^"]*");\n', script)  # fmt: skip
        assert m is not None and m.group(1) == src
        shown[sha] = base64.b64decode(json.loads(m.group(2)))
    assert shown[node["payload_sha256"]] == node["content"].encode("utf-8")
    assert "verified when the page was built" in html and "FAILED verification" not in html


def test_tampered_cold_node_is_shown_failing_verification(viewed: Viewed) -> None:
    path = viewed.node(1)
    node = json.loads(path.read_text(encoding="utf-8"))
    node["content"] = node["content"].replace("a", "b", 1)
    path.write_text(json.dumps(node), encoding="utf-8")
    data = viewed.build()
    assert data["failed_nodes"] == 1
    assert "FAILED verification" in viewed.html()


def test_a_node_whose_base64_content_is_broken_is_shown_failing_not_a_crash(viewed: Viewed) -> None:
    path = viewed.node(1)
    node = json.loads(path.read_text(encoding="utf-8"))
    node["content_encoding"], node["content"] = "base64", "not base64 at all!"
    node["token_count"] = "many"
    path.write_text(json.dumps(node), encoding="utf-8")
    data = viewed.build()
    assert data["failed_nodes"] == 1
    assert "FAILED verification" in viewed.html()


def test_a_node_file_replaced_by_a_fifo_or_a_link_is_shown_failing_and_not_opened(
    viewed: Viewed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO would block a read forever; neither it nor a link is followed. Every node is
    verified over one connection to the store's index (one per node was a schema check each)."""
    from contextfork.cold import index
    from contextfork.view.model import cold_nodes

    fifo, link = viewed.node(1), viewed.node(2)
    outside = viewed.repo.path.parent / "outside.json"
    outside.write_bytes(link.read_bytes())
    fifo.unlink()
    os.mkfifo(fifo)
    link.unlink()
    link.symlink_to(outside)
    # a process of its own with a deadline: a read that waits on the FIFO fails, never hangs
    res = run_cli("view", "--transcript", str(viewed.transcript), "--out", str(viewed.out),
                  "--json", cwd=viewed.repo.path, timeout=60)  # fmt: skip
    assert res.returncode == 0 and res.json()["data"]["failed_nodes"] == 2, res.stderr
    opened: list[object] = []
    real = index.connect
    monkeypatch.setattr(index, "connect", lambda layout: opened.append(layout) or real(layout))
    nodes = cold_nodes(viewed.repo.path, viewed.session)
    assert len(opened) == 1 and len(nodes) >= 3
    assert [n.step_id for n in nodes.values() if not n.verified] == [1, 2]
    assert nodes[2].summary == "" and nodes[3].verified and nodes[3].summary


def test_the_view_holds_no_node_payload_until_its_script_is_written(viewed: Viewed) -> None:
    """Every node's payload held at once made ``view`` of a folded 55 MB session hold 2.65
    bytes per transcript byte: each is read from its file when its script is written."""
    from contextfork.view.model import cold_nodes

    nodes = cold_nodes(viewed.repo.path, viewed.session)
    assert nodes
    for n in nodes.values():
        content = json.loads(n.path.read_text(encoding="utf-8"))["content"]
        held = [v for v in vars(n).values() if isinstance(v, str | bytes)]
        assert content not in held and n.content_b64 not in held
        assert base64.b64decode(n.content_b64) == content.encode("utf-8")


def test_packages_page_shows_validation_drift_handoff_and_patch(viewed: Viewed) -> None:
    html = viewed.html()
    assert "show the inspector" in html and 'class="badge ok">valid' in html
    pkg_pages = list(viewed.out.glob("package-*.html"))
    assert len(pkg_pages) == 1
    page = pkg_pages[0].read_text(encoding="utf-8")
    for part in ("1 · Active goal", "4 · Failed approaches", "6 · Immediate next action"):
        assert part in page
    assert '<span class="add">+    return 42</span>' in page
    assert "manifest.json" in page and "HEAD: <strong>same</strong>" in page


def test_transcript_text_is_escaped_not_executed(viewed: Viewed, tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.jsonl"
    text = viewed.transcript.read_text(encoding="utf-8").replace(
        "Fix the billing port bug", "<script>alert(1)</script>"
    )
    hostile.write_text(text, encoding="utf-8")
    res = run_cli("view", "--transcript", str(hostile), "--out", str(tmp_path / "h"),
                  cwd=viewed.repo.path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "h" / "index.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page


def test_serve_refuses_a_non_loopback_address(viewed: Viewed) -> None:
    res = run_cli("view", "--transcript", str(viewed.transcript), "--serve", "--host", "0.0.0.0",
                  cwd=viewed.repo.path)  # fmt: skip
    assert res.returncode == 2 and "loopback" in res.stderr
    assert res.stderr.count("\n") == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_rebuilds_when_the_transcript_grows(viewed: Viewed) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextfork", "view", "--transcript", str(viewed.transcript),
         "--out", str(viewed.out), "--serve", "--port", str(port)],
        cwd=viewed.repo.path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/index.html"
        deadline = time.monotonic() + 30
        body = ""
        while time.monotonic() < deadline:
            try:
                body = urllib.request.urlopen(url, timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.2)
        before = len(re.findall(r'id="step-\d+"', body))
        assert before > 0
        lines = viewed.transcript.read_text(encoding="utf-8").splitlines()
        last = json.loads(lines[-1])
        extra = dict(last, uuid="99999999-0000-4000-8000-000000000001", parentUuid=last["uuid"],
                     type="user", message={"role": "user", "content": "one more request"})  # fmt: skip
        extra.pop("toolUseResult", None)
        with viewed.transcript.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(extra) + "\n")
        body = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "one more request" in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_replay_page_shows_every_policy_against_native(viewed: Viewed) -> None:
    data = viewed.build("--replay")
    assert "replay.html" in data["pages"]  # type: ignore[operator]
    page = (viewed.out / "replay.html").read_text(encoding="utf-8")
    for policy in ("native", "base", "refold", "epoch", "mask", "compact"):
        assert f'<th scope="row">{policy}</th>' in page
        assert f'data-series="{policy}"' in page
