"""The status card's section protocol against the fake GitHub: concurrent writers lose nothing,
never duplicate the card, and two writers of one section converge on the newest."""

from __future__ import annotations

import threading

import pytest

from ci_tools.errors import InputError
from ci_tools.github.client import GitHub
from ci_tools.prbot.card.shell import SETTLE_S, write_section
from ci_tools.github.client import GitHubError
from ci_tools.prbot.card import decide as card
from ci_tools.prbot import sticky as cm
from ci_tools.prbot.shell import Settings

BOT = "github-actions[bot]"


def client(fake) -> GitHub:
    return GitHub(fake.repo, "t", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)


def cards(fake, pr=1):
    return [c for c in fake.bot_comments(pr) if c["body"].startswith(cm.marker(card.KIND))]


def test_first_write_creates_then_patches_keep_other_sections(fake):
    fake.add_pr(1, head_sha="a" * 40)
    gh = client(fake)
    assert write_section(gh, 1, "sweep", "run 5 passed", bot=BOT, settle=0).action == "create"
    assert write_section(gh, 1, "reuse", "pinned to run 5", bot=BOT, settle=0).action == "update"
    assert write_section(gh, 1, "reuse", "pinned to run 5", bot=BOT, settle=0).action == "none"
    (c,) = cards(fake)
    assert card.sections_of(c["body"]) == {"sweep": "run 5 passed", "reuse": "pinned to run 5"}


def test_someone_elses_lookalike_card_is_not_written_to(fake):
    fake.add_pr(1, head_sha="a" * 40)
    fake.add_comment(1, card.render({"sweep": "forged"}), author="mallory")
    write_section(client(fake), 1, "sweep", "real", bot=BOT, settle=0)
    (c,) = cards(fake)
    assert card.sections_of(c["body"]) == {"sweep": "real"}


def hold_requests(fake, before):
    """Run `before(method, path, body)` in the server's handler thread ahead of each request,
    outside the fake's lock, so a test can make two clients' requests interleave exactly."""
    orig = fake.handle

    def handle(method, raw_path, body, base_url, *rest):
        before(method, raw_path, body)
        return orig(method, raw_path, body, base_url, *rest)

    fake.handle = handle


@pytest.mark.parametrize("rounds", range(3))
def test_two_concurrent_writers_of_different_sections_lose_nothing(fake, rounds):
    fake.add_pr(1, head_sha="a" * 40)
    write_section(client(fake), 1, "plan", "7 points", bot=BOT, settle=0)
    both_read, b_wrote = threading.Event(), threading.Event()
    reads = []

    # Both writers read the card; B writes first; A's write (from what A read before B wrote) then
    # drops B's section: the update a plain read-modify-write loses.
    def before(method, path, body):
        if method == "GET" and "/issues/comments/" in path:
            reads.append(path)
            if len(reads) >= 2:
                both_read.set()
        if method == "PATCH" and "pinned" in body["body"] and not b_wrote.is_set():
            both_read.wait(10)
        if method == "PATCH" and "table" in body["body"] and not b_wrote.is_set():
            b_wrote.wait(10)

    hold_requests(fake, before)
    orig = fake.route

    def route(method, path, body):
        out = orig(method, path, body)
        if method == "PATCH" and "pinned" in body["body"]:
            b_wrote.set()
        return out

    fake.route = route
    results: dict[str, object] = {}

    def writer(section, text):
        try:
            results[section] = write_section(client(fake), 1, section, text, bot=BOT, settle=0.3)
        except BaseException as exc:  # surfaced below
            results[section] = exc

    a = threading.Thread(target=writer, args=("results", "table"))
    b = threading.Thread(target=writer, args=("reuse", "pinned"))
    a.start()
    b.start()
    a.join(30)
    b.join(30)
    assert all(not isinstance(r, BaseException) for r in results.values()), results
    (c,) = cards(fake)
    assert card.sections_of(c["body"]) == {"plan": "7 points", "results": "table", "reuse": "pinned"}
    # the race really happened: B found its section overwritten and wrote again
    assert results["reuse"].attempts > 1


def test_two_writers_creating_the_card_at_once_leave_one(fake):
    fake.add_pr(1, head_sha="a" * 40)
    barrier = threading.Barrier(2)

    def before(method, path, body):
        if method == "POST" and path.endswith("/issues/1/comments"):
            barrier.wait(10)  # both have seen "no card" and create one now

    hold_requests(fake, before)
    done: list[object] = []
    threads = [threading.Thread(target=lambda s=s: done.append(write_section(
        client(fake), 1, s, f"{s} text", bot=BOT, settle=0.3))) for s in ("sweep", "results")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(done) == 2
    (c,) = cards(fake)
    assert card.sections_of(c["body"]) == {"sweep": "sweep text", "results": "results text"}


def test_the_newest_run_wins_a_section_and_an_older_one_steps_back(fake):
    fake.add_pr(1, head_sha="a" * 40)
    gh = client(fake)
    write_section(gh, 1, "sweep", "run 20", bot=BOT, rank=20, settle=0)
    assert write_section(gh, 1, "sweep", "run 19", bot=BOT, rank=19, settle=0).action == "superseded"
    assert write_section(gh, 1, "sweep", "run 21", bot=BOT, rank=21, settle=0).action == "update"
    (c,) = cards(fake)
    assert card.sections_of(c["body"])["sweep"] == "run 21"
    assert cm.state_of_text(c["body"])["ranks"] == {"sweep": 21}


def test_a_card_that_keeps_changing_fails_with_a_reason(fake):
    fake.add_pr(1, head_sha="a" * 40)
    gh = client(fake)
    write_section(gh, 1, "sweep", "x", bot=BOT, settle=0)
    orig = fake.route

    def route(method, path, body):  # every write is immediately undone by "someone else"
        out = orig(method, path, body)
        if method == "PATCH":
            c = fake.comments[int(path.rsplit("/", 1)[1])]
            c["body"] = card.render({"sweep": "x"})
        return out

    fake.route = route
    with pytest.raises(GitHubError, match="kept changing"):
        write_section(gh, 1, "results", "y", bot=BOT, settle=0, attempts=3)


def test_the_card_of_a_finished_sweep_shows_progress_and_results_against_main(fake):
    """The seed PR's sweep finished: its seven points against main's published ones, per family."""
    import json

    from ci_tools.github.events import Event, WorkflowRun
    from ci_tools.prbot.card.flow import status_card
    from ci_tools.results.sources import results_from_csv
    from gh_scenarios import SHA1, lazy, pr_with_sweep, settings
    from tests.conftest import REPO, assert_golden

    seed = REPO / "docs" / "examples" / "seed-compare"
    pr_results = results_from_csv((seed / "pr-local-results.csv").read_text(), "pr.csv")
    main_points = results_from_csv((seed / "main-baseline.csv").read_text(), "main.csv")
    pr_with_sweep(fake, 1)
    fake.add_run(40, head_sha="d" * 40, branch="main", event="push", artifacts=())
    fake.add_artifact_files(40, "results_bmk", {"results/results.json": json.dumps({"results": main_points}).encode()})
    fake.add_run(50, head_sha=SHA1, pull_requests=(1,), artifacts=("changelog-metadata", "sweep-report.html"))
    fake.add_artifact_files(50, "results_bmk", {"results/results.json": json.dumps({"results": pr_results}).encode()})
    fake.add_job(50, "sweep / plan")
    fake.add_job(50, "sweep / canary / gb300-nv dsv41flash c1")
    for c in (1, 4, 16, 16, 32, 64):
        fake.add_job(50, f"sweep / single-node-agentic / gb300-nv dsv41flash c{c}")
    fake.add_job(50, "sweep / agentic-evals / gb300-nv dsv41flash eval c128", conclusion="failure")
    wr = Event(name="workflow_run", repo=fake.repo, workflow_run=WorkflowRun(
        id=50, event="pull_request", status="completed", conclusion="failure", head_sha=SHA1,
        html_url=f"https://github.com/{fake.repo}/actions/runs/50", pull_requests=(1,)))
    res = status_card(wr, settings(), lazy(fake), pr=None, run=None, plan=None)
    assert "results of run 50 compared with main" in res.messages
    (c,) = cards(fake)
    sections = card.sections_of(c["body"])
    assert "| agentic-evals ([first failure](" in sections["sweep"]
    assert "| dep2-c128 | replaces tp2-c128 (TP2), 1 run |" in sections["results"]
    assert "main: 1 sweep run(s) (40)" in sections["results"]
    # the report opens straight from the card: the unzipped artifact's own page, not the run's list
    [report] = [a for a in fake.artifacts[50] if a["name"] == "sweep-report.html"]
    assert f"[open the report](https://github.com/{fake.repo}/actions/runs/50/artifacts/{report['id']})" in sections["results"]
    assert_golden(REPO / "tests" / "golden" / "comments" / "status-card-results.md", c["body"])


def words_above_details(body: str) -> int:
    """Words a reviewer reads before the card's first <details>: hidden comments (markers, the bot's
    state) and link targets are not read; table pipes and rules are not words."""
    import re

    above = body.split("<details>")[0]
    above = re.sub(r"<!--.*?-->", "", above, flags=re.S)
    above = re.sub(r"\]\([^)]*\)", "]", above)
    return sum(1 for w in above.split() if re.search(r"\w", w))


def test_the_seed_card_reads_verdict_first_in_under_150_words():
    from tests.conftest import REPO

    body = (REPO / "tests" / "golden" / "comments" / "status-card-results.md").read_text()
    shown = [line for line in body.splitlines() if line.strip() and not line.startswith("<!--")]
    # a failed run: its state (emoji and word) is the first line a reader sees, then the results title,
    # the one overall verdict with the points counted once each, the values behind it and the frontier
    assert shown[0].startswith("### ❌ Sweep failed / 扫描失败 · [run 50](")
    assert shown[2].startswith("🔴 **Regressed** · 7 points: 1 regressed, 3 improved, 3 new · [open the report](")
    assert shown[3].startswith("21 metric values: 9 compared with main (7 improved, 1 regressed, 1 equivalent), 12 new. "
                               "The PR's frontier offers more tok/s/GPU over 82% of the P90 interactivity range")
    assert body.index("<details>") < body.index("**Sweep / 扫描**")
    assert words_above_details(body) <= 150
    # only what changed above the fold: no equivalent or new value in the compact table
    compact = body.split("<details>")[0]
    assert "equivalent |" not in compact and "new |" not in compact and compact.count("🟢\u00a0improved |") == 7


def test_an_expired_collection_says_what_to_do(fake):
    """A run's results_bmk expired (GitHub's retention): the card says so and how to get results
    back, never GitHub's raw answer."""
    from ci_tools.github.client import GitHubError
    from ci_tools.github.events import Event, WorkflowRun
    from ci_tools.prbot import messages
    from ci_tools.prbot.card.flow import status_card
    from gh_scenarios import SHA1, lazy, pr_with_sweep, settings

    pr_with_sweep(fake, 1)
    fake.add_run(50, head_sha=SHA1, pull_requests=(1,), artifacts=("changelog-metadata",), expired=("results_bmk",))
    wr = Event(name="workflow_run", repo=fake.repo, workflow_run=WorkflowRun(
        id=50, event="pull_request", status="completed", conclusion="success", head_sha=SHA1,
        html_url=f"https://github.com/{fake.repo}/actions/runs/50", pull_requests=(1,)))
    status_card(wr, settings(), lazy(fake), pr=None, run=None, plan=None)
    (c,) = cards(fake)
    results = card.sections_of(c["body"])["results"]
    assert "`results_bmk` artifact has expired" in results and "run the sweep again" in results
    assert c["body"].splitlines()[2].startswith("### ✅ Sweep passed")
    # the same words when the download itself answers 410 (it expired between the listing and the download)
    run = {"id": 50, "url": "https://github.com/o/r/actions/runs/50"}
    gone = messages.results_not_downloaded("results_bmk", GitHubError("artifact 7 has expired", status=410), run)
    assert gone == messages.results_expired("results_bmk", run)
    other = messages.results_not_downloaded("results_bmk", GitHubError("HTTP 502", status=502), run)
    assert "Re-run this card's job" in other and "HTTP 502" in other


@pytest.mark.parametrize("env,settle", [({}, SETTLE_S), ({"CI_TOOLS_CARD_SETTLE": ""}, SETTLE_S),
                                        ({"CI_TOOLS_CARD_SETTLE": "0"}, 0.0), ({"CI_TOOLS_CARD_SETTLE": "3.5"}, 3.5),
                                        ({"CI_TOOLS_CARD_SETTLE": "soon"}, "CI_TOOLS_CARD_SETTLE='soon' is not a"),
                                        ({"CI_TOOLS_CARD_SETTLE": "-2"}, "not a number of seconds >= 0")])
def test_commands_settle_as_the_protocol_needs_unless_told(tmp_path, env, settle):
    """The workflow tests against the fake set 0 (no concurrent writer there); a command on GitHub
    waits SETTLE_S before it re-reads its section; a value that is no wait is refused by name."""
    if isinstance(settle, str):
        with pytest.raises(InputError, match=settle):
            Settings.from_env(tmp_path, env)
    else:
        assert Settings.from_env(tmp_path, env).card_settle == settle
