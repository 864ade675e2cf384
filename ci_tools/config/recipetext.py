"""What a recipe's text may not say (pure): a value whose reading depends on the YAML version, and
characters that hide or reorder what a reviewer sees.

Recipes are read with PyYAML (YAML 1.1: `config validate`, `plan` and the runner), and edited and checked
in editors through the recipe schema (YAML 1.2): `trust-remote-code: yes` is true to the one and the text
"yes" to the other, so the server would run with a flag the reviewer's editor shows as text. A `model:`
holding a bidi control shows as another model in the PR and in the results. Both are refused at their
place, with the rules the changelog gate uses (`ci_tools/yaml/readings.py`, `ci_tools/yaml/text.py`: one
definition each).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ci_tools.errors import Finding
from ci_tools.yaml.located import YamlDoc
from ci_tools.yaml.readings import Divergence, describe
from ci_tools.yaml.text import BAD_TEXT, char_name


def _where(path: tuple) -> str:
    shown = [str(p) for p in path if p != "<key>"]
    return ".".join(shown) if shown else "the document"


def _reading(doc: YamlDoc, d: Divergence) -> Finding:
    where = f"the key {d.value!r} under {_where(d.path[:-1])}" if d.is_key else _where(d.path)
    if d.tag is not None:
        return Finding(doc.file, d.line, d.col,
                       f"{where}: the YAML tag {d.tag} on {d.value!r}: YAML 1.1 and 1.2 readers resolve tagged values "
                       "differently", "remove the tag and write the plain value (`true`, `4`) or quoted text")
    if isinstance(d.old, bool):
        fix = f"write `{str(d.old).lower()}` (true and false are read alike by every YAML version)"
    else:
        quoted = d.value.replace("\\", "\\\\").replace('"', '\\"')
        fix = f'quote it: `"{quoted}"` if you mean the text'
    return Finding(doc.file, d.line, d.col,
                   f"{where}: `{d.value}` is {describe(d.old)} to YAML 1.1 (PyYAML: config validate, plan and the "
                   f"runner) but {describe(d.new)} to YAML 1.2 (editors, the recipe schema)", fix)


def _texts(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str):
                yield (*path, key), key
            yield from _texts(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _texts(value, (*path, i))


def findings(doc: YamlDoc, divergent: list[Divergence]) -> list[Finding]:
    """The recipe's values read differently by YAML 1.1 and 1.2 (`divergent`, from `divergences` over its
    text) and every key or text value holding a character of `BAD_TEXT`, each at its line."""
    # `<<:`, the merge key the recipe schema accepts, is a merge to both readers (editors apply it too)
    out = [_reading(doc, d) for d in divergent if not (d.is_key and d.value == "<<" and d.tag is None)]
    for path, text in _texts(doc.data):
        m = BAD_TEXT.search(text)
        if m is None:
            continue
        more = len(BAD_TEXT.findall(text)) - 1
        out.append(doc.finding(path, f"{_where(path)} contains {char_name(m.group())} at character {m.start() + 1}"
                               + (f" (and {more} more such character{'s' if more > 1 else ''})" if more else ""),
                               "delete it: it is invisible or changes how the text shows in the PR, the plan and the "
                               "results (in a quoted string, escapes such as \\e, \\0, \\u202e write it too)"))
    return out

