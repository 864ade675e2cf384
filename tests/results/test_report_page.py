"""The sweep report page as a reviewer opens it from the card: one HTML file (the unzipped artifact),
in the real Chromium at a phone's, a laptop's and a desktop's width, in the light and the dark
scheme, with scripts on and off (GitHub does not say that scripts run in an artifact it shows).

Each of the 12 views: no sideways scroll of the page; the overall verdict, the PR link and a chart in
the first screen; axe-core's rules with 0 violations. Also: the page's size, its one frontier
sentence, the regressed point marked on the chart, what the script adds (tooltip, toggles, sorting by
keyboard) and that nothing is missing without it. Load time is measured in benchmarks/report_page.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import main
from tests.conftest import NVIDIA_SMI_H200, REPO

SEED = REPO / "docs" / "examples" / "seed-compare"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SCREENS = {390: 844, 1280: 800, 1920: 1080}     # a phone, a laptop, a desktop
MAX_BYTES = 1_500_000
VIEWS = [(w, scheme, js) for w in SCREENS for scheme in ("light", "dark") for js in (True, False)]


def axe_source() -> str:
    path = Path(os.environ.get("CI_TOOLS_AXE") or REPO / ".venv" / "axe-core" / "node_modules" / "axe-core" / "axe.min.js")
    if not path.is_file():
        pytest.fail(f"the report page tests need axe-core at {path}: `python3 dev.py test` installs it "
                    "(npm install axe-core@4.14.1), or set CI_TOOLS_AXE to its axe.min.js")
    return path.read_text(encoding="utf-8")


def chromium() -> str:
    from tests.results.test_report_browser import chromium as find

    return find()


def write(out: Path, *args: str) -> None:
    argv = ["results", "report", *args, "--out", str(out)]
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="module")
def seed_page(tmp_path_factory) -> Path:
    """The seed PR against main, as the collect job writes it for PR 7 of octo/bench, run 50."""
    out = tmp_path_factory.mktemp("page") / "sweep-report.html"
    write(out, str(SEED / "pr-local-results.csv"), "--baseline", str(SEED / "main-baseline.csv"),
          "--telemetry", str(NVIDIA_SMI_H200),
          "--repo", "octo/bench", "--pr", "7", "--commit", "ab" * 20, "--run-id", "50")
    return out


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium(), headless=True, args=FLAGS)
        yield b
        b.close()


def open_view(browser, page: Path, width: int, scheme: str, js: bool):
    """A fresh context at this size and scheme. Scripts off: the page's own script removed, so that
    axe (itself a script) can still run over exactly what a reader without scripts gets."""
    ctx = browser.new_context(viewport={"width": width, "height": SCREENS[width]}, color_scheme=scheme,
                              device_scale_factor=1)
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    if js:
        pg.goto(page.as_uri())
    else:
        pg.set_content(re.sub(r"<script>.*?</script>", "", page.read_text(encoding="utf-8"), flags=re.S))
    pg.outside, pg.errors = outside, errors
    return ctx, pg


def first_screen(pg) -> dict:
    """What the first screen shows, without scrolling."""
    return pg.evaluate("""() => {
      const vh = innerHeight, vw = innerWidth;
      const seen = el => { if (!el) return 0; const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) return 0;
        const h = Math.min(r.bottom, vh) - Math.max(r.top, 0), w = Math.min(r.right, vw) - Math.max(r.left, 0);
        return Math.max(0, h) * Math.max(0, w) / (r.width * r.height); };
      const charts = [...document.querySelectorAll('#chart svg.chart')].filter(s => s.getBoundingClientRect().width > 0);
      return {scroll: document.documentElement.scrollWidth - vw, verdict: seen(document.getElementById('overall')),
              verdict_text: document.getElementById('overall').textContent,
              pr: seen(document.getElementById('pr-link')), pr_href: document.getElementById('pr-link').href,
              chart: charts.length ? seen(charts[0]) : 0, charts: charts.length,
              background: getComputedStyle(document.documentElement).backgroundColor};
    }""")


def axe(pg) -> list:
    return pg.evaluate("""(src) => { (0, eval)(src);
      return axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v =>
        ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))); }""", axe_source())


@pytest.mark.parametrize("width, scheme, js", VIEWS, ids=[f"{w}-{s}-{'js' if j else 'nojs'}" for w, s, j in VIEWS])
def test_each_view_fits_opens_with_the_verdict_and_passes_axe(browser, seed_page, width, scheme, js):
    ctx, pg = open_view(browser, seed_page, width, scheme, js)
    try:
        seen = first_screen(pg)
        assert seen["scroll"] <= 0, f"the page scrolls sideways by {seen['scroll']} px"
        assert seen["verdict"] == 1 and seen["verdict_text"] == "Regressed"
        assert seen["pr"] == 1 and seen["pr_href"] == "https://github.com/octo/bench/pull/7"
        assert seen["charts"] == 1 and seen["chart"] >= 0.75, f"{seen['chart']:.0%} of the chart in the first screen"
        assert axe(pg) == []
        assert pg.outside == [] and pg.errors == []
    finally:
        ctx.close()


def test_the_page_follows_the_readers_scheme(browser, seed_page):
    backgrounds = {}
    for scheme in ("light", "dark"):
        ctx, pg = open_view(browser, seed_page, 1280, scheme, True)
        backgrounds[scheme] = first_screen(pg)["background"]
        ctx.close()
    assert backgrounds == {"light": "rgb(255, 255, 255)", "dark": "rgb(13, 17, 23)"}


def test_the_page_is_small_self_contained_and_says_the_frontier_in_one_sentence(seed_page):
    page = seed_page.read_text(encoding="utf-8")
    assert len(page.encode()) <= MAX_BYTES
    assert "<script src" not in page and "<link" not in page and "<img" not in page and "@import" not in page
    [frontier] = re.findall(r'<p class="frontier">(.*?)</p>', page)
    assert len(re.findall(r"[.;!?](\s|$)", frontier.replace("tok/s/GPU", ""))) <= 2 and frontier.endswith(".")
    assert frontier.startswith("The PR&#x27;s frontier offers more tok/s/GPU over 82% of the P90 interactivity range")
    # points and metric values counted apart, never one beside the other's unit
    assert '<p class="points">7 points: 1 regressed, 3 improved, 3 new</p>' in page
    assert "21 metric values: 9 compared with main (7 improved, 1 regressed, 1 equivalent), 12 new." in page


def test_the_regressed_point_is_marked_on_the_chart_without_scripts(browser, seed_page):
    ctx, pg = open_view(browser, seed_page, 1280, "light", False)
    try:
        marked = pg.eval_on_selector_all("#pareto .pt.regressed", "gs => gs.map(g => [g.dataset.name, "
                                         "!!g.querySelector('circle.ring'), g.querySelector('title').textContent])")
        assert [(name, ring) for name, ring, _ in marked] == [("tp4-c4", True)]
        assert "throughput: 9,338 tok/s/GPU (main 10,017, -6.8%" in marked[0][2]     # the SVG's own tooltip
        assert pg.locator("#legend").inner_text().count("regressed point") == 1
        # without scripts: every point drawn, the table whole, no toggle that would do nothing
        assert pg.locator("#pareto .s-pr .pt").count() == 7 and pg.locator("#pareto .s-main .pt").count() == 7
        assert pg.locator("#verdicts tbody tr").count() == 7
        assert pg.locator("#legend input:visible").count() == 0
    finally:
        ctx.close()


def test_the_script_adds_a_tooltip_toggles_and_keyboard_sorting(browser, seed_page):
    ctx, pg = open_view(browser, seed_page, 1280, "light", True)
    try:
        pg.hover("#pareto .s-pr .pt[data-name='tp4-c16'] .mk")
        tip = pg.locator("#tip")
        assert tip.is_visible() and "tp4-c16: TP4, concurrency 16" in tip.inner_text()
        assert "P90 interactivity: 424.9 tok/s/user (main 222.2, +91.2%" in tip.inner_text()
        pg.mouse.move(2, 2)
        assert not tip.is_visible()
        pg.uncheck("#legend input[value=main]")
        assert pg.locator("#pareto g.s-main").is_hidden() and pg.locator("#pareto g.s-pr").is_visible()
        assert pg.locator("#pareto .label[data-series=main]").first.is_hidden()
        pg.check("#legend input[value=main]")
        button = pg.locator("#verdicts th button", has_text="throughput")
        button.focus()
        pg.keyboard.press("Enter")
        pg.keyboard.press("Enter")                   # the second press sorts descending
        order = pg.eval_on_selector_all("#verdicts tbody tr", "rows => rows.map(r => r.dataset.point)")
        assert order[:2] == ["dep2-c128", "dep2-c64"] and order[-1] == "tp4-c1"
        assert pg.get_attribute("#verdicts th:has(button:has-text('throughput'))", "aria-sort") == "descending"
    finally:
        ctx.close()


def test_a_smoke_run_page_draws_without_a_baseline_and_keeps_its_workloads_apart(browser, tmp_path, h100_run):
    """The real H100 run: no baseline, an agentic and a fixed-seq-len result of tp1-c16, a cancelled job."""
    runs = h100_run
    coll = tmp_path / "results.json"
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(
        ["results", "collect", str(runs), "--out", str(coll)])), [])
    assert r.exit_code == 0, r.output
    page = tmp_path / "sweep-report.html"
    write(page, str(coll), "--telemetry", str(runs), "--repo", "octo/bench", "--run-id", "9")
    ctx, pg = open_view(browser, page, 390, "dark", True)
    try:
        assert pg.locator("#pr-link").count() == 0          # no PR was given: no PR link is made up
        assert pg.get_attribute(".crumbs a", "href") == "https://github.com/octo/bench/actions/runs/9"
        assert pg.inner_text("#overall") == "No baseline"
        lines = pg.eval_on_selector_all("#pareto polyline.frontier", "ls => ls.map(l => l.dataset.group)")
        assert sorted(lines) == ["agentic-coding"]           # the fixed-seq-len workload is one point: no line
        names = pg.eval_on_selector_all("#pareto .pt", "gs => gs.map(g => g.dataset.name)")
        assert sorted(names) == ["tp1-c16 (agentic-coding)", "tp1-c16 (fixed-seq-len)", "tp1-c4"]
        assert pg.locator(".job").count() == 4 and "cancelled (SIGINT)" in pg.inner_text("#telemetry")
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        assert axe(pg) == []
    finally:
        ctx.close()
    assert json.loads(coll.read_text())["valid"] == 3
