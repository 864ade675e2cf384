"""What a reader of a GitHub comment sees, for tests: the body rendered by cmark-gfm (GitHub's Markdown
renderer, with the extensions GitHub enables: tables, autolinks, strikethrough, task lists and the tag
filter), raw HTML kept for the sanitizer as GitHub keeps it, then read by html5lib, a parser that builds
the tree a browser builds (open tags, attributes over lines, foster-parented table text).

GitHub's sanitizer keeps the text of elements it does not allow and drops comments and `<script>`; a
collapsed `<details>` shows only its `<summary>`. Text in `<pre>` and `<code>` is shown, as code.
`prbot/markdown.py` is the project's own reading, which must never find a command where this shows none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

try:
    import cmarkgfm
    import html5lib
    from cmarkgfm.cmark import Options
except ImportError as exc:   # a test dependency (pyproject's `test` extra): fail, never skip
    pytest.fail(f"{exc}: the comment rendering tests need cmarkgfm and html5lib from the `test` extra "
                "(python3 dev.py test installs it)", pytrace=False)

# Elements whose text is not shown (dropped by the sanitizer), and those that mark text as something
# else than a plain line of a comment (code, a quote, a list item, a heading, a table, a link).
_HIDDEN = {"script", "style"}
_DECORATED = {"pre", "code", "blockquote", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "a"}
_BLOCK = {"p", "div", "li", "ul", "ol", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "tr",
          "td", "th", "thead", "tbody", "details", "summary", "hr", "br", "dl", "dt", "dd", "section", "article"}


def render(body: str) -> str:
    """The HTML GitHub makes of a comment body, before its sanitizer."""
    return cmarkgfm.github_flavored_markdown_to_html(body, options=Options.CMARK_OPT_UNSAFE)


@dataclass(frozen=True)
class Seen:
    html: str
    text: str          # every shown text, code included, block by block on lines
    plain: frozenset[str]   # the lines shown as plain text: not code, quoted, listed, a heading or a link
    checked: int       # task-list boxes ticked
    unchecked: int

    def shows(self, words: str) -> bool:
        """`words` are shown somewhere (as text or code), not followed by more of a word."""
        return re.search(re.escape(words) + r"(?![\w-])", self.text) is not None


def seen(body: str) -> Seen:
    html = render(body)
    root = html5lib.parseFragment(html, container="div", treebuilder="dom", namespaceHTMLElements=False)
    shown: list[str] = []
    plain: list[str] = []
    boxes = {True: 0, False: 0}

    def walk(node, decorated: bool) -> None:
        for child in node.childNodes:
            if child.nodeType == child.TEXT_NODE:
                shown.append(child.data)
                plain.append(re.sub(r"[^\n]+", "\0", child.data) if decorated else child.data)
            elif child.nodeType == child.ELEMENT_NODE:
                tag = child.tagName.lower()
                if tag in _HIDDEN:
                    continue
                if tag == "input" and child.getAttribute("type") == "checkbox":
                    boxes[child.hasAttribute("checked")] += 1
                block = tag in _BLOCK
                if block:
                    shown.append("\n")
                    plain.append("\n")
                inner = decorated or tag in _DECORATED
                if tag == "details" and not child.hasAttribute("open"):
                    for part in child.childNodes:
                        if part.nodeType == part.ELEMENT_NODE and part.tagName.lower() == "summary":
                            walk(part, inner)
                else:
                    walk(child, inner)
                if block:
                    shown.append("\n")
                    plain.append("\n")

    walk(root, False)
    lines = frozenset(line.strip(" \t") for line in "".join(plain).split("\n") if "\0" not in line)
    return Seen(html, "".join(shown), lines, boxes[True], boxes[False])
