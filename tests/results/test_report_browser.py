"""The sweep report of the seed PR, opened in a real headless Chromium (Debian's, driven by Playwright).

The page must draw from `file://` alone: every request to anything else fails the test. Then what a
reviewer sees is checked the way a reviewer would see it: the chart's drawn points (inline SVG), a
real mouse hover over TP4 c16, the telemetry panel's power curve of the recorded H200 job, and a
screenshot of the chart against the committed one (`docs/report-seed-chart.png`) within a
tolerance. The page at every width and scheme, with and without scripts, and axe-core's rules are in
test_report_page.py. `python3 dev.py test` installs chromium when it is missing.

The browser sees only the fonts pinned here (`pinned_fonts`: Debian's fonts-dejavu-core, which dev.py
installs), through a fontconfig of its own: a machine's other fonts (fonts-liberation, a Recommends of
chromium; fonts-wqy-zenhei) would draw the same text with other glyph widths and move the picture.
The pictures are rewritten only by `python3 dev.py update-goldens tests/results/test_report_browser.py`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import main
from tests.conftest import NVIDIA_SMI_H200, REPO, dev_py

SEED = REPO / "docs" / "examples" / "seed-compare"
GOLDEN = REPO / "docs" / "report-seed-chart.png"
PAGE_SHOT = REPO / "docs" / "report-seed.png"
HOVER_SHOT = REPO / "docs" / "report-seed-hover.png"
H200 = NVIDIA_SMI_H200
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}


def chromium() -> str:
    path = os.environ.get("CI_TOOLS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail("the browser tests need Debian's chromium (apt-get install chromium); "
                    "`python3 dev.py test` installs it when it runs as root")
    return path


def pinned_fonts(folder: Path) -> dict[str, str]:
    """The environment that shows the browser only the fonts dev.py installs (FONT_FILES of FONT_DIR) and
    maps every family the page names (system-ui, "Segoe UI", Roboto, "Noto Sans", ...) to them, with
    fixed rendering settings: the same pixels whatever else the machine has installed."""
    dev = dev_py()
    fonts = folder / "fonts"
    fonts.mkdir(parents=True)
    for name in dev.FONT_FILES:
        src = Path(dev.FONT_DIR) / name
        if not src.exists():
            pytest.fail(f"{src} is missing: the browser tests draw with Debian's fonts-dejavu-core "
                        "(apt-get install fonts-dejavu-core); `python3 dev.py test` installs it as root")
        (fonts / name).symlink_to(src)
    alias = "".join(f'<alias binding="same"><family>{generic}</family><prefer><family>{family}</family></prefer></alias>'
                    for generic, family in (("sans-serif", "DejaVu Sans"), ("serif", "DejaVu Serif"),
                                            ("monospace", "DejaVu Sans Mono")))
    (folder / "fonts.conf").write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>{fonts}</dir>
  <cachedir>{folder / "cache"}</cachedir>
  {alias}
  <match target="pattern"><edit name="family" mode="append_last"><string>DejaVu Sans</string></edit></match>
  <match target="font">
    <edit name="antialias" mode="assign"><bool>true</bool></edit>
    <edit name="hinting" mode="assign"><bool>true</bool></edit>
    <edit name="hintstyle" mode="assign"><const>hintslight</const></edit>
    <edit name="rgba" mode="assign"><const>none</const></edit>
  </match>
</fontconfig>
""")
    return {**os.environ, "FONTCONFIG_FILE": str(folder / "fonts.conf")}


def other_fonts(folder: Path) -> dict[str, str]:
    """What a machine with more fonts does to a browser that reads the system's fontconfig: a user font
    folder and configuration (XDG) that prefer matplotlib's STIX font, with other glyph widths than
    DejaVu's, for every family the page names. The page is drawn under this and `pinned_fonts` together."""
    import matplotlib

    fonts = folder / "data" / "fonts"
    fonts.mkdir(parents=True)
    (fonts / "STIXGeneral.ttf").symlink_to(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "STIXGeneral.ttf")
    conf = folder / "config" / "fontconfig"
    conf.mkdir(parents=True)
    prefer = "".join(f'<alias binding="strong"><family>{f}</family><prefer><family>STIXGeneral</family></prefer></alias>'
                     for f in ("sans-serif", "serif", "system-ui", "-apple-system", "Segoe UI", "Roboto", "Noto Sans",
                               "Open Sans", "verdana", "arial", "Arial", "DejaVu Sans"))
    (conf / "fonts.conf").write_text(f'<?xml version="1.0"?>\n<fontconfig>{prefer}</fontconfig>\n')
    return {"XDG_DATA_HOME": str(folder / "data"), "XDG_CONFIG_HOME": str(folder / "config"),
            "XDG_CACHE_HOME": str(folder / "cache")}


def write_report(out: Path) -> None:
    argv = ["results", "report", str(SEED / "pr-local-results.csv"), "--baseline", str(SEED / "main-baseline.csv"),
            "--telemetry", str(H200), "--title", "seed PR against main", "--out", str(out)]
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    html = tmp_path_factory.mktemp("report") / "report.html"
    write_report(html)
    outside: list[str] = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=chromium(), headless=True, args=FLAGS,
                                                    viewport=VIEWPORT, device_scale_factor=1,
                                                    env={**pinned_fonts(Path(profile) / "fontconfig"),
                                                         **other_fonts(Path(profile) / "other-fonts")})

        def route(r):
            if r.request.url.startswith("file://"):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        ctx.route("**/*", route)
        pg = ctx.new_page()
        # a 4.8 MB page on a shared 2-core machine under load: Playwright's 30 s default is too tight
        pg.set_default_timeout(180_000)
        pg.set_default_navigation_timeout(180_000)
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.goto(html.as_uri())
        pg.wait_for_selector("#pareto .pt")
        pg.outside, pg.errors, pg.html = outside, errors, html
        pg.launch = lambda env: pw.chromium.launch(executable_path=chromium(), headless=True, args=FLAGS, env=env)
        yield pg
        ctx.close()
    assert outside == [], f"the page asked for {outside}: it must draw from the file alone"


def drawn(page, series: str) -> list[str]:
    """The names of the points the chart drew for one series (`s-pr`, `s-main`)."""
    return page.eval_on_selector_all(f"#pareto g.{series} .pt", "gs => gs.map(g => g.dataset.name)")


def test_nothing_outside_the_file_is_fetched_and_no_script_fails(page):
    assert page.outside == [] and page.errors == []


def test_the_chart_draws_seven_pr_points_and_mains(page):
    assert len(drawn(page, "s-pr")) == 7
    # main's nine published points, less the two with a median only (said in the note)
    assert len(drawn(page, "s-main")) == 7
    assert "main tp2-c64, main tp2-c128" in page.inner_text("#chart-note")
    assert page.locator("#pareto polyline.frontier").count() == 2
    assert page.locator("#pareto polyline.frontier.dashed").count() == 1        # main's
    assert "log scale" in page.text_content("#pareto .axis-title >> nth=1")


def test_hovering_tp4_c16_shows_its_values_and_verdict(page):
    page.hover("#pareto g.s-pr .pt[data-name='tp4-c16'] .mk")
    text = page.inner_text("#tip")
    assert "tp4-c16: TP4, concurrency 16" in text
    assert "throughput: 28,838 tok/s/GPU (main 28,694, +0.5%" in text
    assert "P90 interactivity: 424.9 tok/s/user (main 222.2, +91.2%, 95% " in text
    assert "improved" in text
    if os.environ.get("CI_TOOLS_UPDATE_GOLDEN"):  # the picture docs/maintainer.md shows
        page.screenshot(path=str(HOVER_SHOT), clip=page.locator("#chart").bounding_box())
    page.mouse.move(5, 5)


def test_telemetry_panel_draws_the_recorded_h200_power_curve(page):
    job = page.locator(".job[data-job='telemetry-load']")
    assert "mean board power" in job.inner_text() and "sw power cap" in job.inner_text()
    curve = job.evaluate("""el => {
      const line = el.querySelector('svg polyline.power'), box = el.querySelector('svg').viewBox.baseVal;
      const pts = line.getAttribute('points').trim().split(/\\s+/).map(p => p.split(',').map(Number));
      return {n: pts.length, top: Math.min(...pts.map(p => p[1])), bottom: Math.max(...pts.map(p => p[1])),
              height: box.height};
    }""")
    # the recording's 158 samples: idle at ~80 W, then at the H200's 700 W cap (the axis tops out at 770 W)
    assert curve["n"] == 158 and curve["top"] < 0.2 * curve["height"] and curve["bottom"] > 0.7 * curve["height"]


MEASURE = """(family) => { const c = document.createElement('canvas').getContext('2d');
  c.font = '12px ' + family; return c.measureText('28,838 tok/s/GPU (main 28,694)').width; }"""


def test_the_browser_draws_with_the_pinned_fonts_alone(page, tmp_path):
    """The other fonts the page is drawn beside do change the text of a browser that is not pinned (so
    the screenshot below would catch a pin that leaks), and do not change the pinned one's."""
    family = page.evaluate("getComputedStyle(document.body).fontFamily")   # the families the page names
    widths = []
    for env in ({**os.environ, **other_fonts(tmp_path / "other")}, pinned_fonts(tmp_path / "pinned")):
        browser = page.launch(env)
        widths.append(browser.new_page().evaluate(MEASURE, family))
        browser.close()
    unpinned, dejavu = widths
    drawn = page.evaluate(MEASURE, family)
    assert drawn == dejavu != unpinned, (family, drawn, dejavu, unpinned)


def _difference(a: Path, b: Path) -> float:
    """Share of pixels that differ by more than a little (anti-aliasing and font hinting pass)."""
    from PIL import Image, ImageChops

    x, y = Image.open(a).convert("RGB"), Image.open(b).convert("RGB")
    if x.size != y.size:
        return 1.0
    diff = ImageChops.difference(x, y).convert("L").point(lambda v: 255 if v > 48 else 0)
    return sum(diff.histogram()[255:]) / (x.size[0] * x.size[1])


def test_chart_screenshot_matches_the_committed_one(page, tmp_path):
    page.mouse.move(5, 5)
    shot = tmp_path / "chart.png"
    page.locator("#chart").screenshot(path=str(shot))
    if os.environ.get("CI_TOOLS_UPDATE_GOLDEN"):   # set by `python3 dev.py update-goldens` alone
        shutil.copy(shot, GOLDEN)
        page.screenshot(path=str(PAGE_SHOT), full_page=True)
    assert GOLDEN.exists(), f"missing {GOLDEN}: `python3 dev.py update-goldens {Path(__file__).relative_to(REPO)}` draws it"
    share = _difference(shot, GOLDEN)
    if share >= 0.001:
        kept = Path(tempfile.gettempdir()) / "report-seed-chart.actual.png"
        shutil.copy(shot, kept)
        pytest.fail(f"{share:.2%} of the chart's pixels differ from {GOLDEN} (limit 0.1 %); this run's picture "
                    f"is {kept}: compare the two")
