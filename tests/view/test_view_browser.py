"""The inspector in a real browser: Chromium (Debian's) driven by Selenium, from file://.

Skips with a reason where Chromium, its driver or Selenium is absent; `.ci/run` installs them.
Screenshots go to ``$CONTEXTFORK_ARTIFACTS`` (default ``test-artifacts/`` in the checkout).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.harness import cc_fixture
from tests.helpers import npm_package
from tests.view.browsing import open_page, shot, wait_for
from tests.view.conftest import Viewed

AXE = "axe-core@4.10.3"


def test_browser_timeline_shows_every_step(viewed: Viewed, browser: Any) -> None:
    from contextfork.transcript import load_session

    expected = len(load_session(viewed.transcript).steps)
    open_page(browser, viewed.out / "index.html")
    shown = browser.execute_script("return document.querySelectorAll('li.step').length")
    assert shown == expected
    shot(browser, "timeline")


def test_browser_reveal_shows_exactly_the_stored_bytes_and_rechecks_the_hash(
    viewed: Viewed, browser: Any
) -> None:
    node = json.loads(viewed.node(1).read_text(encoding="utf-8"))
    open_page(browser, viewed.out / "index.html")
    box = f'.cold-node[data-sha256="{node["payload_sha256"]}"]'
    browser.execute_script(f"document.querySelector('{box} button.reveal').scrollIntoView()")
    browser.find_element("css selector", f"{box} button.reveal").click()
    state = wait_for(browser, f"return document.querySelector('{box}').dataset.browserCheck")
    assert state == "ok"
    text = browser.execute_script(f"return document.querySelector('{box} pre.original').textContent")
    assert text == node["content"]
    shot(browser, "revealed")


def test_browser_search_finds_a_term_across_pages(viewed: Viewed, browser: Any) -> None:
    open_page(browser, viewed.out / "index.html")
    box = browser.find_element("id", "q")
    box.send_keys(cc_fixture.BIG_MARKER)
    links = wait_for(browser, "var a = document.querySelectorAll('#search-results a'); "
                           "return a.length ? Array.from(a).map(x => x.getAttribute('href')) : null")  # fmt: skip
    assert any("#step-" in h for h in links)
    shot(browser, "search")


def test_browser_tampered_node_fails_the_browser_check(viewed: Viewed, browser: Any) -> None:
    path = viewed.node(1)
    node = json.loads(path.read_text(encoding="utf-8"))
    node["content"] = node["content"].replace("5433", "5434", 1)
    path.write_text(json.dumps(node), encoding="utf-8")
    viewed.build()
    open_page(browser, viewed.out / "index.html")
    box = f'.cold-node[data-sha256="{node["payload_sha256"]}"]'
    assert "FAILED verification" in browser.find_element("css selector", box).text
    browser.execute_script(f"document.querySelector('{box} button.reveal').click()")
    assert wait_for(browser, f"return document.querySelector('{box}').dataset.browserCheck") == "mismatch"
    shot(browser, "tampered")


def test_browser_keyboard_expands_a_collapsed_block(viewed: Viewed, browser: Any) -> None:
    from selenium.webdriver.common.keys import Keys

    open_page(browser, viewed.out / "index.html")
    button = browser.find_element("css selector", "button.toggle")
    browser.execute_script("arguments[0].focus()", button)
    button.send_keys(Keys.ENTER)
    assert button.get_attribute("aria-expanded") == "true"
    target = browser.find_element("id", button.get_attribute("aria-controls"))
    assert "collapsed" not in (target.get_attribute("class") or "")


def _axe_source() -> str:
    script, why = npm_package(AXE, "node_modules/axe-core/axe.min.js")
    if script is None:
        pytest.skip(why)
    return script.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", ["index.html", "packages.html", "package"])
def test_browser_accessibility_pass_has_no_serious_violations(
    viewed: Viewed, browser: Any, page: str
) -> None:
    """axe-core (the engine behind Lighthouse's accessibility audit): labels, contrast, ARIA."""
    target = next(viewed.out.glob("package-*.html")) if page == "package" else viewed.out / page
    open_page(browser, target)
    browser.execute_script(_axe_source())
    browser.set_script_timeout(60)
    result = browser.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations))"
        ".catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));"
    )
    serious = [f"{v['id']} ({v['impact']}): {v['help']} × {len(v['nodes'])}"
               for v in result if v.get("impact") in ("serious", "critical")]  # fmt: skip
    assert serious == []
