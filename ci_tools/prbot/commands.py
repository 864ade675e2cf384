"""The one grammar for pull-request comment commands: a pure parser returning typed commands, and
the registry saying, per command word, its forms, the permission it needs and what it does.

    /use                     pin nothing: reuse the newest eligible sweep run (un-pins an earlier /use N)
    /use <run_id>            pin the sweep run <run_id> for reuse at merge
    /reuse-sweep-run [id]    legacy spelling of /use, same meaning
    /stage-results [id]      stage a run's results in the results app
    /sweep plan              reply with the sweep plan of this PR
    /sweep approve <sha>     approve one head commit of a fork PR for a trusted sweep (its full 40-digit SHA)

A command is a whole line of its own (surrounding spaces allowed). Lines inside fenced code blocks (in
a list item too), indented code and quotes (`> ...`) are never commands, so quoting someone's command or
showing it in an example does nothing; nor are a quote's continuation lines or a code span over lines.
Neither are lines a reader of the rendered comment cannot see (`markdown.read`): inside a collapsed
`<details>` block, a `<pre>` block or a `<script>`, `<style>` or `<textarea>` (GitHub shows those as
text; taken as hidden all the same), an HTML comment (`<!-- ... -->`), and lines of markup that runs
over several lines and renders as nothing, or that raw HTML left open swallows (a tag's attribute such
as a multi-line `<img alt="...">`, a link reference definition such as `[//]: # (...)`, a link's title,
an image's alt text, `<div title="` and a blank line). The rule is checked against GitHub's renderer
(cmark-gfm) by the fuzz tier: no command it takes is hidden there. Only ASCII spaces and tabs separate a command's words: `/use` followed by a
NO-BREAK or EM SPACE looks like a command but is not one. A line that starts with a known command word but has the wrong arguments is
a `UsageProblem` carrying the right forms, so the bot can reply instead of guessing; so is a word one
typo away from a command (`/usee`, `/stage-result`), with a did-you-mean. Other slash words (`/foo`,
`/assign`) are not ours and are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ci_tools import names
from ci_tools.prbot import markdown

MAX_RUN_ID_DIGITS = 20


@dataclass(frozen=True)
class Use:
    run_id: int | None = None
    legacy: bool = False          # spelled /reuse-sweep-run

    @property
    def text(self) -> str:
        word = "/reuse-sweep-run" if self.legacy else "/use"
        return f"{word} {self.run_id}" if self.run_id is not None else word


@dataclass(frozen=True)
class StageResults:
    run_id: int | None = None

    @property
    def text(self) -> str:
        return f"/stage-results {self.run_id}" if self.run_id is not None else "/stage-results"


@dataclass(frozen=True)
class SweepPlan:
    text: str = "/sweep plan"


@dataclass(frozen=True)
class SweepApprove:
    # lower-case hex, 7 to 40 digits, as given: only the full 40 approves anything (`approval.decide`);
    # a prefix parses so that its reply can say so and show the full SHA to copy
    sha: str

    @property
    def text(self) -> str:
        return f"/sweep approve {self.sha}"


@dataclass(frozen=True)
class UsageProblem:
    command: str          # the command word as the grammar spells it, e.g. "/use"
    line: int             # 1-based line in the comment body
    given: str            # the offending line, stripped
    forms: tuple[str, ...]
    suggestion: str | None = None   # the command word a near miss (`/usee`) was probably meant to be


Command = Use | StageResults | SweepPlan | SweepApprove

WRITE = "write"   # the collaborator permission write, maintain or admin (`WRITE_PERMISSIONS`)
WRITE_PERMISSIONS = names.MAINTAINER_PERMISSIONS


@dataclass(frozen=True)
class Help:
    """One registry row (Prow's plugin help): the usage reply and `ci-tools comment --help` read it."""

    word: str                      # the command as named, e.g. "/use", "/sweep approve"
    kind: type                     # the typed command it parses to
    forms: tuple[str, ...]         # every accepted spelling, for the usage reply
    what: str                      # what it does, in one line
    requires: str | None = WRITE   # the repository permission its author needs (None: anyone who can comment)


REGISTRY: tuple[Help, ...] = (
    Help("/use", Use, ("/use", "/use <run_id>"), "pin a sweep run (or the newest eligible one) for reuse at merge"),
    Help("/reuse-sweep-run", Use, ("/reuse-sweep-run", "/reuse-sweep-run <run_id>"), "legacy spelling of `/use`"),
    Help("/stage-results", StageResults, ("/stage-results", "/stage-results <run_id>"),
         "stage a run's results in the results app"),
    Help("/sweep plan", SweepPlan, ("/sweep plan",), "reply with the plan the sweep workflow last computed", None),
    Help("/sweep approve", SweepApprove, ("/sweep approve <sha>",),
         "fork PRs: a trusted sweep of head commit <sha> (its full 40-character SHA)"),
)
# The forms shown for a command word used wrongly (`/sweep` alone: both of its forms).
FORMS: dict[str, tuple[str, ...]] = {}
for _row in REGISTRY:
    FORMS[_row.word.split()[0]] = FORMS.get(_row.word.split()[0], ()) + _row.forms

# The permission each command needs before it runs (bors-ng's REQUIRED map): `/sweep plan` only reads.
REQUIRED: dict[type, str | None] = {row.kind: row.requires for row in REGISTRY}


def word_of(command: Command) -> str:
    """The registry word of a parsed command."""
    if isinstance(command, Use):
        return "/reuse-sweep-run" if command.legacy else "/use"
    return next(row.word for row in REGISTRY if row.kind is type(command))


def required(commands) -> str | None:
    """The permission a comment's commands need, folded over all of them (checked once, before any runs)."""
    return WRITE if any(REQUIRED.get(type(c)) == WRITE for c in commands) else None


def allows(permission: str, needed: str | None) -> bool:
    return needed is None or permission in WRITE_PERMISSIONS

_SHA = re.compile(r"[0-9a-fA-F]{7,40}")
_RUN_ID = re.compile(rf"[1-9][0-9]{{0,{MAX_RUN_ID_DIGITS - 1}}}")


_WORDS = re.compile(r"[ \t]+")  # ASCII separators only (str.split() would also split on NBSP, EM SPACE...)
# a quote line with text (an empty `>` opens no paragraph), in a list item too (`- > ...`)
_QUOTE = re.compile(r"[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)*>(?![ \t>]*$)")


def _command_lines(body: str):
    """(line number, stripped text) of lines that may hold a command: not in code, not quoted, not hidden."""
    quoted = False  # in a quote's paragraph: its lines without `>` continue it (CommonMark's lazy lines)
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    seen = markdown.read(body)
    skip = seen.fenced | seen.hidden | seen.elements
    for number, raw in enumerate(body.split("\n"), start=1):
        if number - 1 in skip:
            continue
        quoted = quoted or bool(_QUOTE.match(raw))
        if not raw.strip(" \t"):
            quoted = False
            continue
        if raw.startswith("    ") or raw.startswith("\t"):
            continue  # indented code block
        if quoted:
            continue
        yield number, raw.strip(" \t")


def _one_edit_apart(a: str, b: str) -> bool:
    """One insertion, deletion, substitution or swap of neighbours turns `a` into `b` (a typo)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = sorted((a, b), key=len)
    i = next((i for i, (x, y) in enumerate(zip(short, long)) if x != y), len(short))
    return short[i:] == long[i + 1:]


def near_miss(word: str) -> str | None:
    """The command word `word` is one typo away from, if any: `/usee` -> `/use`. Slash words further
    away (`/users`, `/assign`) belong to people or other bots and stay unanswered."""
    return next((known for known in FORMS if _one_edit_apart(word, known)), None)


def parse(body: str | None) -> list[Command | UsageProblem]:
    """Every command and usage problem in a comment body, in order."""
    found: list[Command | UsageProblem] = []
    for number, text in _command_lines(body or ""):
        if not text.startswith("/"):
            continue
        word, *args = _WORDS.split(text)
        key = word.lower()
        if key not in FORMS:
            meant = near_miss(key)
            if meant:
                found.append(UsageProblem(command=key, line=number, given=text, forms=FORMS[meant], suggestion=meant))
            continue
        problem = UsageProblem(command=key, line=number, given=text, forms=FORMS[key])
        if word != key:
            found.append(problem)  # commands are lower case; say so rather than silently ignore
            continue
        if key in ("/use", "/reuse-sweep-run", "/stage-results"):
            if len(args) > 1 or (args and not _RUN_ID.fullmatch(args[0])):
                found.append(problem)
                continue
            run_id = int(args[0]) if args else None
            found.append(StageResults(run_id) if key == "/stage-results"
                         else Use(run_id, legacy=key == "/reuse-sweep-run"))
        elif args == ["plan"]:
            found.append(SweepPlan())
        elif len(args) == 2 and args[0] == "approve" and _SHA.fullmatch(args[1]):
            found.append(SweepApprove(args[1].lower()))
        else:
            found.append(problem)
    return found


def effective_use(parsed: list[Command | UsageProblem]) -> Use | None:
    """The comment's reuse command: within one comment the last `/use` wins (the rule's one home)."""
    uses = [c for c in parsed if isinstance(c, Use)]
    return uses[-1] if uses else None


_ORDER = {Use: 0, StageResults: 1, SweepPlan: 1, SweepApprove: 2}


def to_run(parsed: list[Command | UsageProblem], *, created: bool) -> list[Command]:
    """The commands one comment event runs, in the order they run: the effective `/use` first (its
    reply says what the card now shows), then each `/stage-results` and `/sweep plan` as written, then
    the last `/sweep approve`. An edited comment stages nothing and starts no sweep again: both are
    one-off requests, and fixing a typo elsewhere in the comment must not repeat them."""
    use = effective_use(parsed)
    approvals = [c for c in parsed if isinstance(c, SweepApprove)]
    chosen = [c for c in parsed if c is use or isinstance(c, SweepPlan)
              or (created and (isinstance(c, StageResults) or (approvals and c is approvals[-1])))]
    return sorted(chosen, key=lambda c: _ORDER[type(c)])
