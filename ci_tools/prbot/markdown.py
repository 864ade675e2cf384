"""Which lines of a comment body GitHub renders as text a reader sees. Pure.

GitHub renders comments with cmark-gfm (CommonMark), then its HTML sanitizer. Some markup spans
several lines and shows none of them: a raw HTML tag whose quoted attribute runs over lines
(`<img alt="` ... `">`), a link reference definition (`[//]: # (` ... `)`, a common "Markdown
comment"), an inline link's destination and title or an image's alt text when they run over lines. And
raw HTML passes through as written: an HTML block that leaves a tag or a quoted attribute open
(`<div title="`, then a blank line) swallows the rendered lines after it. A command or a ticked box
written there is one nobody sees, so the comment grammar (`commands.py`) and the sign-off checklist
(`signoff/decide.py`) skip those lines; also code (fenced blocks, code spans over lines), which shows
text but never acts.

Raw HTML is read the way a browser reads it (WHATWG's tokenizer for tags, attributes and comments), in
the HTML blocks CommonMark passes through as written, after GitHub's tag filter (`<script` is text).

Each rule errs on the side of hiding: a line that could be inside such markup counts as hidden (a
visible command then needs saying again, which is safe; an invisible one acting is not). What cannot be
told without CommonMark's whole block structure is read both ways: an indented tag line, one in a
paragraph or inside a container may start an HTML block or not, so each of its lines is read again, and
a tag open at any of its line ends hides the rest. The scans are linear in the body: regular expressions
without ambiguous repetition, the delimited constructs by bisecting their closing characters'
positions, each character read by the tokenizer at most a few times (past a budget the rest is hidden).
`tests/fuzz/test_fuzz_comments_rendered.py` checks the rule against cmark-gfm and a browser's parser.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

# A whole fenced code block: its opening line (a backtick fence's info string holds no backtick), then
# whole lines up to the first closing fence of its character and at least its length, or the body's end.
_FENCED = re.compile(r"^ {0,3}(?:(?P<b>`{3,})[^`\n]*|(?P<t>~{3,})[^\n]*)(?=\n|\Z)"
                     r"(?:\n(?:[^\n]*\n)*?[ ]{0,3}(?(b)(?P=b)`*|(?P=t)~*)[ \t]*(?=\n|\Z)|[\s\S]*)", re.M)
# More backtick runs than this in one body: pairing them costs a loop per run, so every line from the
# first run to the last is taken as code instead (no real comment comes near it).
MAX_BACKTICK_RUNS = 2000

# CommonMark's open tag: a name, attributes (an unquoted, 'single' or "double" quoted value, the quoted
# ones across lines if need be), optional `/`, `>`. A closing tag may hold blanks and a line ending too.
_VALUE = r"""(?:[^\s"'=<>`]+|'[^']*'|"[^"]*")"""
_TAG = re.compile(rf"<[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*{_VALUE})?)*\s*/?>"
                  r"|</[A-Za-z][A-Za-z0-9-]*\s*>")
# The same, whole on one line (an HTML block of kind 7 starts with one).
_LINE_TAG = (r"<[A-Za-z][A-Za-z0-9-]*(?:[ \t]+[A-Za-z_:][A-Za-z0-9_.:-]*(?:[ \t]*=[ \t]*"
             r"""(?:[^\s"'=<>`]+|'[^'\n]*'|"[^"\n]*"))?)*[ \t]*/?>|</[A-Za-z][A-Za-z0-9-]*[ \t]*>""")
# A link reference definition: `[label]:`, a destination (on the next line if need be), an optional title
# ("...", '...' or (...), across lines if need be) and nothing else on its last line. It renders as nothing.
_TITLE = r"""(?:"(?:[^"\\]|\\[\s\S])*"|'(?:[^'\\]|\\[\s\S])*'|\((?:[^()\\]|\\[\s\S])*\))"""
_LINK_DEF_START = re.compile(r"^[ \t]*(?:(?:>|[-+*]|\d{1,9}[.)])[ \t]*)*\[", re.M)
_LINK_DEF = re.compile(rf"^[ \t]*(?:(?:>|[-+*]|\d{{1,9}}[.)])[ \t]*)*\[(?:[^\[\]\\]|\\.){{1,999}}\]:[ \t]*\n?[ \t]*(?:<[^<>\n]*>|[^\s<]\S*)"
                       rf"(?:[ \t]*\n?[ \t]*{_TITLE})?[ \t]*$", re.M)
# An inline link's or image's `(destination "title")`: a line ending may stand before the destination and
# before the title, and the title itself may run over lines. Shown: neither.
_LINK_TAIL = re.compile(rf"\]\([ \t]*\n?[ \t]*(?:<[^<>\n]*>|[^\s()<]*(?:\([^\s()]*\)[^\s()]*)*)"
                        rf"(?:[ \t]*\n?[ \t]*{_TITLE})?[ \t]*\n?[ \t]*\)")
# A line that certainly ends the paragraph before it (CommonMark): blank, or the start of a list item with
# text (an ordered one only from 1), a quote, a heading or a fence. Inline markup never runs across one.
# Other lines that may end a paragraph are not listed: missing one only keeps markup that may be none.
_INTERRUPTS = re.compile(r"^(?:[ \t]*$| {0,3}(?:[-+*][ \t]+\S|1[.)][ \t]+\S|>|#{1,6}(?:[ \t]|$)|```[^`\n]*$|~~~))",
                         re.M)


class Lines:
    """A set of 0-based line numbers kept as sorted, disjoint, inclusive ranges: a 1 MB body of newlines
    is a million lines, and one open tag may hide all of them."""

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()):
        merged: list[list[int]] = []
        for first, last in sorted(ranges):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        self.ranges = [(a, b) for a, b in merged]
        self._firsts = [a for a, _ in self.ranges]

    def __contains__(self, line: int) -> bool:
        i = bisect.bisect_right(self._firsts, line) - 1
        return i >= 0 and line <= self.ranges[i][1]

    def __or__(self, other: "Lines") -> "Lines":
        return Lines(self.ranges + other.ranges)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lines) and self.ranges == other.ranges

    def __repr__(self) -> str:
        return f"Lines({self.ranges})"

    def keep(self, lines: list[str]) -> list[str]:
        """`lines` without the ones in this set, by slices (no per-line test)."""
        out: list[str] = []
        at = 0
        for first, last in self.ranges:
            out.extend(lines[at:first])
            at = max(at, last + 1)
        out.extend(lines[at:])
        return out


def _line_ranges(body: str, spans: Iterable[tuple[int, int]], *, single: bool = False) -> Lines:
    """The lines character spans touch: only those running over several lines unless `single`. Line
    numbers by counting newlines between sorted offsets, so the cost is one pass over the body."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):    # overlapping spans as one: each character is counted once
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    ranges: list[tuple[int, int]] = []
    at = line = 0
    for start, end in merged:
        line += body.count("\n", at, start)
        at = start
        last = line + body.count("\n", start, max(start, end - 1))
        if single or last > line:
            ranges.append((line, last))
    return Lines(ranges)


def _delimited(body: str, opener: str, closer: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each `opener` ... first `closer` after it (one bisection each: linear in effect)."""
    closes = [m.start() for m in re.finditer(re.escape(closer), body)]
    for m in re.finditer(re.escape(opener), body):
        i = bisect.bisect_left(closes, m.end())
        if i == len(closes):
            break
        yield m.start(), closes[i] + len(closer)


def _image_alts(body: str, breaks: list[int]) -> Iterator[tuple[int, int]]:
    """(start, end) of each image's `![` to the last `]` of its paragraph (`breaks`: where blocks may
    start): the alt text may hold brackets (`![a [b] c](x)`), so its end is taken as late as it can be."""
    closes = [m.start() for m in re.finditer(r"\]", body)]
    for m in re.finditer(r"!\[", body):
        nxt = bisect.bisect_right(breaks, m.start())
        limit = breaks[nxt] if nxt < len(breaks) else len(body)
        i = bisect.bisect_left(closes, limit) - 1
        if i >= 0 and closes[i] > m.start():
            yield m.start(), closes[i] + 1


def _code_spans(body: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each inline code span: a run of backticks to the next run of the same length in
    the same paragraph (CommonMark; a run with no partner is literal). Its text shows, but as code."""
    runs = [(m.start(), m.end() - m.start()) for m in re.finditer("`+", body)]
    if not runs:
        return
    if len(runs) > MAX_BACKTICK_RUNS:
        yield runs[0][0], runs[-1][0] + runs[-1][1]
        return
    blocks = [m.start() for m in _INTERRUPTS.finditer(body)]
    keys = [(bisect.bisect_right(blocks, start), length) for start, length in runs]
    partner: list[int | None] = [None] * len(runs)
    after: dict[tuple[int, int], int] = {}
    for i in range(len(runs) - 1, -1, -1):
        partner[i] = after.get(keys[i])
        after[keys[i]] = i
    i = 0
    while i < len(runs):
        j = partner[i]
        if j is None:
            i += 1
            continue
        yield runs[i][0], runs[j][0] + runs[j][1]
        i = j + 1


def markup_lines(body: str) -> Lines:
    """The lines (0-based, of `body` split on "\\n") that a multi-line tag, comment, link reference
    definition, link destination and title, image alt text or code span touches: markup a reader of the rendered
    comment does not see as text (or, for a code span, sees as code). Markup on one line is left alone:
    the line holding it is not a command anyway, and a checklist line keeps its visible part."""
    spans: list[tuple[int, int]] = [m.span() for m in _TAG.finditer(body)]
    # a definition may start on a line another one's title runs over: each line is tried
    spans += [d.span() for m in _LINK_DEF_START.finditer(body) if (d := _LINK_DEF.match(body, m.start()))]
    spans += [m.span() for m in _LINK_TAIL.finditer(body)]
    # an inline comment, and what a browser reads as a bogus comment up to the first `>` (a processing
    # instruction `<?...?>`, a declaration `<!X...>`, CDATA): shown as nothing
    spans += list(_delimited(body, "<!--", "-->")) + list(_delimited(body, "<?", ">")) + list(_delimited(body, "<!", ">"))
    breaks = [m.start() for m in _INTERRUPTS.finditer(body)] if "![" in body or spans else []
    spans += list(_image_alts(body, breaks))     # an image's alt text: shown as nothing (the image)
    multi = [(a, b) for a, b in spans if body.find("\n", a, b) >= 0]
    if multi:
        # inline markup ends with its paragraph: a span over a line that starts another block is none
        # (`<img alt="`, then `- [x] item`: a list, shown). Raw HTML blocks are `read`'s.
        multi = [(a, b) for a, b in multi if bisect.bisect_right(breaks, a) == bisect.bisect_right(breaks, b - 1)]
    return _line_ranges(body, multi + list(_code_spans(body)))


# CommonMark's HTML blocks: raw HTML passed to the page as written. Kinds 1-5 end at their closing
# text, 6 and 7 at a blank line. A line of kind 7 (any complete tag alone on it) in a paragraph, an
# indented one or one in a container (`>`, list markers, looked through) may start no block at all:
# `read` takes such a block as one that may be none.
_BLOCK_TAGS = ("address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
               "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|"
               "head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|"
               "param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul")
_HTML_STARTS = (
    (re.compile(r"<(?:script|pre|style|textarea)(?:[\s>]|$)", re.I | re.M),
     re.compile(r"</(?:script|pre|style|textarea)>", re.I)),
    (re.compile(r"<!--"), re.compile(r"-->")),
    (re.compile(r"<\?"), re.compile(r"\?>")),
    (re.compile(r"<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
    (re.compile(rf"</?(?:{_BLOCK_TAGS})(?:[\s>]|/>|$)", re.I | re.M), None),
    (re.compile(rf"(?:{_LINE_TAG})[ \t]*$", re.M), None),
)
# Where a fence or an HTML block may start: the first `<`, backtick or tilde of a line, after only what a
# line may hold before one (blanks; `>` and list markers before an HTML block).
_FIRST = re.compile(r"[<`~]")
_BEFORE_TAG = re.compile(r"(?:[ \t]*>|[ \t]*(?:[-+*]|\d{1,9}[.)])(?=[ \t]))*[ \t]*")
_BLANK_LINE = re.compile(r"^[ \t]*$", re.M)
# A browser's tokenizer (WHATWG HTML, "Tokenization") for the states that swallow text: a tag and its
# attributes, a comment, a bogus comment (`<?...>`, `<!x...>`, `</ ...>`: to the first `>`, quotes or not).
# A quote opens an attribute value only after `=` (`<a b"c>` is one attribute name, and ends at `>`).
# GitHub's tag filter (cmark-gfm's `tagfilter`) writes `<script`, `<style`, ... as `&lt;script`: text, so no
# tag opens there.
_HTML_SPACE = "\t\n\f\r "
_FILTERED = "title|textarea|style|xmp|iframe|noembed|noframes|script|plaintext"
_OPEN = re.compile(rf"<(?:(?P<empty>!--->|!-->)|(?P<comment>!--)|(?P<text>/?(?i:{_FILTERED})(?=[\t\n\v\f\r >]|/>|$)|/>)"
                   r"|(?P<bogus>[!?]|/(?![A-Za-z]))|(?P<tag>/?[A-Za-z]))")
_COMMENT_END = re.compile(r"--!?>")
_TAG_NAME = re.compile(rf"[^{_HTML_SPACE}/>]*")
# One step inside a tag: separators, then its end, or an attribute name with an optional `=` and value (the
# opening quote of a quoted one: its end is searched for apart, so a step is linear).
_ATTRIBUTE = re.compile(rf"[{_HTML_SPACE}/]*(?:(?P<end>>)|=?[^{_HTML_SPACE}/>=]*[{_HTML_SPACE}]*"
                        rf"""(?:=[{_HTML_SPACE}]*(?:(?P<quote>["'])|[^{_HTML_SPACE}>]*))?)""")
# The quote markers a line of a block quote starts with: not raw HTML, but read as such they would end a tag.
_QUOTE_MARKERS = re.compile(r"^[ \t]*(?:>[ \t]*)+", re.M)


def _always(m: re.Match[str] | None) -> re.Match[str]:
    """The match of a pattern that also matches the empty string, so it matches at any place."""
    if m is None:
        raise AssertionError("a pattern that matches the empty string did not match")
    return m


def _tag_end(text: str, at: int, end: int) -> int | None:
    """Where the tag whose name starts at `at` ends (after its `>`), or None when it is still open at `end`."""
    at = _always(_TAG_NAME.match(text, at, end)).end()
    while at < end:
        step = _always(_ATTRIBUTE.match(text, at, end))
        if step.group("end"):
            return step.end()
        if step.group("quote"):
            close = text.find(step.group("quote"), step.end(), end)
            if close < 0:
                return None
            at = close + 1
        else:
            at = step.end()    # always past at least one character: a name, `=` or a separator
    return None


def _raw_html(text: str, start: int = 0, end: int | None = None) -> tuple[list[tuple[int, int]], int | None]:
    """Read text[start:end] as raw HTML from the data state: (the spans of the tags, comments and bogus
    comments it closes, where the one still open at `end` began or None)."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    at = start
    while (m := _OPEN.search(text, at, end)) is not None:
        kind = m.lastgroup
        if kind in ("empty", "text"):
            at = m.end()
            continue
        if kind == "comment":
            close = _COMMENT_END.search(text, m.end(), end)
            closed = close.end() if close else None
        elif kind == "bogus":
            close_at = text.find(">", m.end(), end)
            closed = close_at + 1 if close_at >= 0 else None
        else:
            closed = _tag_end(text, m.end(), end)
        if closed is None:
            return spans, m.start()
        spans.append((m.start(), closed))
        at = closed
    return spans, None


# A fence opened in a list item (`- ```` ): its lines are the item's while indented to the item's content.
_LIST_FENCE = re.compile(r"(?: {0,3}(?:[-+*]|\d{1,9}[.)]) {1,4})+ {0,3}(?:(`{3,})[^`\n]*|(~{3,})[^\n]*)$", re.M)
# The elements whose content a reader does not see as text: a collapsed `<details>`, `<pre>` (code), and
# those GitHub filters (`<script>`, `<style>`, `<textarea>`: taken as hiding, whatever the filter does).
_HIDING = "details|pre|script|style|textarea"
# Elements a browser's "has an element in scope" stops at: inside an open one a `</details>` closes nothing.
_SCOPES = "table|td|th|caption|object|marquee|applet|template|svg|math"
_HIDING_OPEN = re.compile(rf"<({_HIDING}|{_SCOPES})(?![A-Za-z0-9-])", re.I)
_HIDING_CLOSE = re.compile(rf"</({_HIDING}|{_SCOPES})(?![A-Za-z0-9-])", re.I)


def _starts(body: str, at: int) -> Iterator[tuple[int, int, re.Match | tuple[int, int] | None]]:
    """(line start, offset of the `<` or fence, the fenced block or None) of each line from `at` on that
    may open a fenced block (its match, or (start, end) of one in a list item) or an HTML block. One
    search per such line: a line whose first `<`, backtick or tilde stands after other text is passed
    over whole."""
    while True:
        m = _FIRST.search(body, at)
        if not m:
            return
        line_start = body.rfind("\n", 0, m.start()) + 1
        prefix_end = _always(_BEFORE_TAG.match(body, line_start, m.start())).end()
        if m.group() == "<" and prefix_end == m.start():
            yield line_start, m.start(), None
        elif m.group() != "<" and m.start() - line_start <= 3 and (fence := _FENCED.match(body, line_start)):
            yield line_start, m.start(), fence
        elif m.group() != "<" and prefix_end == m.start() and (item := _LIST_FENCE.match(body, line_start)):
            yield line_start, m.start(), (line_start, _list_fence_end(body, item))
        line_end = body.find("\n", m.start())
        if line_end < 0:
            return
        at = line_end + 1


def _list_fence_end(body: str, opening: re.Match) -> int:
    """Where a fenced block opened in a list item ends: after its closing fence, or before the first
    line indented less than the item's content (which ends the item), or at the body's end."""
    fence = opening.group(1) or opening.group(2)
    content = opening.start(1 if opening.group(1) else 2) - opening.start()   # the fence starts the item's text
    close = re.compile(rf" {{{content},{content + 3}}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    at = opening.end()
    while at < len(body):
        start = at + 1
        end = body.find("\n", start)
        end = len(body) if end < 0 else end
        line = body[start:end]
        if line.strip(" \t") and len(line) - len(line.lstrip(" ")) < content:
            return at
        at = end
        if close.match(line):
            return at
    return len(body)


@dataclass(frozen=True)
class Reading:
    """What GitHub makes of a comment body's lines (0-based, of the body split on "\\n")."""

    fenced: Lines       # fenced code blocks, fences included (an unclosed fence runs to its end)
    html: Lines         # HTML blocks: raw HTML, shown as the browser reads it, no Markdown inside
    hidden: Lines       # not seen as text: markup over lines, raw HTML over lines or left open
    elements: Lines     # a hiding element (`<details>`, `<pre>`, ...) from its opening tag to its closing one


def read(body: str) -> Reading:
    """Fenced code and HTML blocks, and what a reader does not see as text. One pass over the lines where
    a fence or an HTML block may start (plain text costs one search), each HTML block read as a browser
    would. Raw HTML left open hides everything after it: what would close it may be markup the renderer
    writes (a link's `href="..."`), which is not read here. An HTML block inside a quote or a list item
    may end before the blank line (a line without the quote's `>`, or not indented), so there a tag open
    at any line's end hides the rest too.

    Where a hiding element ends errs the same way: its opening tag counts wherever it stands outside
    fenced code (in a code span too), its closing tag only as raw HTML a browser reads as a tag, in an HTML
    block that certainly is one (not indented into a container; of kind 7 only after a blank line)."""
    fences: list[tuple[int, int]] = []
    blocks: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] = []
    closers: list[tuple[int, str]] = []
    at = tokenized = 0
    budget = 4 * len(body) + 65536     # a safety net: each character is read at most three times
    read_to = {False: 0, True: 0}
    found_at: dict[int, tuple[int, re.Match | None]] = {}

    def next_match(kind: int, at: int) -> re.Match | None:
        """The first end of a block of `kind` at or after `at`: blocks are read in order, so a search
        already made answers every later one up to what it found (the scan stays linear)."""
        stop = _HTML_STARTS[kind][1] or _BLANK_LINE
        searched, match = found_at.get(id(stop), (-1, None))
        if not (0 <= searched <= at and (match is None or match.start() >= at)):
            match = stop.search(body, at)
            found_at[id(stop)] = (at, match)
        return match

    while (found := next(_starts(body, at), None)) is not None:
        line_start, tag_at, fence = found
        line_end = body.find("\n", tag_at)
        line_end = len(body) if line_end < 0 else line_end
        at = line_end + 1
        if fence is not None:
            span = fence.span() if isinstance(fence, re.Match) else fence
            fences.append(span)
            at = span[1] + 1     # a fenced block's lines start nothing
            continue
        kind = next((i for i, (start, _) in enumerate(_HTML_STARTS) if start.match(body, tag_at)), None)
        if kind is None:
            continue
        to_blank = _HTML_STARTS[kind][1] is None
        close = next_match(kind, min(line_end + 1, len(body)) if to_blank else tag_at)
        if to_blank:        # to the blank line
            block_end = close.start() if close else len(body)
        else:               # to the end of the line holding its closing text
            block_end = body.find("\n", close.end()) if close else -1
            block_end = len(body) if block_end < 0 else block_end
        blocks.append((line_start, max(block_end, line_end)))
        prefix = body[line_start:tag_at]
        previous = body[body.rfind("\n", 0, max(0, line_start - 1)) + 1:max(0, line_start - 1)]
        certain = len(prefix) <= 3 and not prefix.strip(" ") and (
            kind < len(_HTML_STARTS) - 1 or line_start == 0 or not previous.strip(" \t"))
        quoted = ">" in prefix      # its later lines' quote markers are no part of the HTML
        # A block that may be none is read again from each of its lines that may start one (below). What an
        # earlier such reading covered, from a data state at a line's start with every line ending in the
        # data state, reads the same again: only what lies past it is read.
        start = tag_at if certain else max(tag_at, read_to[quoted])
        closed: list[tuple[int, int]] = []
        still_open = None
        if start < block_end:
            seg_start = body.rfind("\n", 0, start) + 1
            seg = body[seg_start:block_end]
            if quoted:
                seg = _QUOTE_MARKERS.sub(lambda q: " " * len(q.group()), seg)
            tokenized += len(seg)
            found_spans, open_at = _raw_html(seg, start - seg_start)
            closed = [(seg_start + a, seg_start + b) for a, b in found_spans]
            still_open = None if open_at is None else seg_start + open_at
        spans += closed
        if certain:
            starts = [a for a, _ in closed]
            for m in _HIDING_CLOSE.finditer(body, tag_at, block_end if still_open is None else still_open):
                i = bisect.bisect_right(starts, m.start()) - 1
                if i < 0 or closed[i][0] == m.start() or closed[i][1] <= m.start():   # a tag itself, or in text
                    closers.append((m.start(), m.group(1).lower()))
        else:   # it may end sooner or later than read here: a tag open at any line's end hides the rest
            over = next((a for a, b in closed if body.find("\n", a, b) >= 0), None)
            still_open = over if still_open is None or (over is not None and over < still_open) else still_open
            if still_open is None:
                read_to[quoted] = max(read_to[quoted], block_end)
        if tokenized > budget:
            still_open = tag_at     # past the budget: the rest counts as hidden
        if still_open is not None:
            spans.append((still_open, len(body) + 1))   # everything after it is swallowed
            break
        # a block that may be none (an indented line, a tag line in a paragraph, a container's): the lines
        # after its first may start one, so they are read again (each reading counts against the budget)
        at = max(block_end, line_end) + 1 if certain else line_end + 1
    fenced = _line_ranges(body, fences, single=True)
    return Reading(fenced=fenced, html=_line_ranges(body, blocks, single=True),
                   hidden=markup_lines(body) | _line_ranges(body, spans),
                   elements=_elements(body, fenced, closers))


def _elements(body: str, fenced: Lines, closers: list[tuple[int, str]]) -> Lines:
    """The lines from each hiding element's opening tag (outside fenced code) to the closing tag that ends
    it (`closers`: (offset, name) of the certain ones); one left open runs to the end. A closing tag ends
    its own kind only, as a browser ignores a stray `</pre>` inside `<details>`, and none while a table (or
    another element a browser's scope stops at) may be open inside it."""
    events: list[tuple[int, int, str]] = []
    line = at = 0
    for m in _HIDING_OPEN.finditer(body):
        line += body.count("\n", at, m.start())
        at = m.start()
        if line not in fenced:
            events.append((m.start(), 1, m.group(1).lower()))
    if not any(name in _HIDING.split("|") for _, _, name in events):
        return Lines()
    events += [(offset, -1, name) for offset, name in closers]
    events.sort()
    depth = dict.fromkeys(_HIDING.split("|"), 0)
    scopes = 0
    spans: list[tuple[int, int]] = []
    opened = -1
    for offset, step, name in events:
        if name not in depth:
            scopes = max(0, scopes + step)
            continue
        if step < 0 and scopes:
            continue
        if step > 0 and not any(depth.values()):
            opened = offset
        depth[name] = max(0, depth[name] + step)
        if step < 0 and opened >= 0 and not any(depth.values()):
            spans.append((opened, offset + 1))
            opened = -1
    if any(depth.values()):
        spans.append((opened, len(body) + 1))
    return _line_ranges(body, spans, single=True)


# A list item's marker (a bullet, or 1-9 digits and `.` or `)`), then blanks or the line's end.
_LIST_MARKER = re.compile(r"([-+*]|\d{1,9}[.)])( *)(?=\S|$)")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*$")


def list_items(lines: Iterable[str | None]) -> Iterator[int]:
    """The indices of the lines that open a list item as CommonMark reads them: a marker indented less
    than four columns past the content of the item it would nest in (past the margin outside any list).
    Deeper, the line is an indented code block (after a blank line) or a paragraph's continuation: text
    either way, never a list item (`    - [x] a` after a paragraph shows "- [x] a"). A None (a line not
    read: fenced code, raw HTML, hidden markup) ends every list, as would most blocks there. A line
    continuing an item's paragraph less indented than its content ends the item here (CommonMark keeps it
    lazily): the lines after it then count as less deep than they are, so as fewer items."""
    content: list[int] = []     # the content columns of the open list items, innermost last
    for i, raw in enumerate(lines):
        if raw is None:
            content.clear()
            continue
        line = raw.expandtabs(4) if "\t" in raw else raw
        text = line.lstrip(" ")
        if not text:
            continue
        indent = len(line) - len(text)
        while content and indent < content[-1]:
            content.pop()
        if indent - (content[-1] if content else 0) >= 4:
            continue
        first = text[0]
        if first in "-*_" and _THEMATIC_BREAK.match(text):
            content.clear()
        elif (first in "-+*" or first.isdigit()) and (m := _LIST_MARKER.match(text)):
            spaces = len(m.group(2))
            content.append(indent + m.end(1) + (spaces if 1 <= spaces <= 4 and m.end() < len(text) else 1))
            yield i
