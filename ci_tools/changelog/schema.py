"""Validation of one new changelog entry: the entry schema, its combination rules and its pr-link.

The rules mirror `ci_tools/schemas/changelog.schema.json` (editors use that file; a test checks
the two agree). They are written out in Python because importing and compiling jsonschema would
cost more than the whole gate is allowed to take, and because each rule deserves its own message.
"""

from __future__ import annotations

import re

from ci_tools.changelog.keys import is_pattern, resolve_keys
from ci_tools.changelog.parse import Entry
from ci_tools.errors import Finding
# the characters no text of a new entry may hold: one definition, recipes use it too
from ci_tools.yaml.text import BAD_TEXT, char_name

SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
REQUIRED = ("config-keys", "description", "pr-link")
# Characters of one entry's description, all items together: what shows it must hold it, and GitHub holds
# at most 65,536 in a whole comment (a 1 MB description passed). InferenceX's longest is 6,266.
MAX_DESCRIPTION_CHARS = 16_384
OPTIONAL_BOOLS = ("evals-only", "all-evals", "append-only")
FIELDS = REQUIRED + ("scenario-type",) + OPTIONAL_BOOLS + ("eval-min-prefill-ep",)

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def valid_repo(repo: str) -> bool:
    return bool(_REPO.fullmatch(repo))


def pr_url(repo: str, pr: int | str) -> str:
    return f"https://github.com/{repo}/pull/{pr}"


def canonical_link(link: object, repo: str) -> bool:
    """`https://github.com/<repo>/pull/<n>` with n a positive number without leading zeros."""
    return isinstance(link, str) and re.fullmatch(re.escape(pr_url(repo, "")) + r"[1-9][0-9]*", link) is not None


_ANY_PR_LINK = re.compile(r"https?://(?:www\.)?github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/pull/0*([1-9][0-9]*)"
                          r"(?:[/?#][^\s]*)?/?", re.I)


def linked_pr(link: object) -> tuple[str, int] | None:
    """(repository, number) of a link that names a pull request in any of the forms people paste:
    `/pull/N`, its sub-pages (`/changes`, `/files`, `/commits`, `#discussion...`), http, www, a slash."""
    if not isinstance(link, str):
        return None
    m = _ANY_PR_LINK.fullmatch(link.strip())
    return (m.group(1), int(m.group(2))) if m else None


def placeholders(repo: str) -> tuple[str, str]:
    return ("XXX", pr_url(repo, "XXX"))


def is_placeholder(link: object, repo: str) -> bool:
    return link in placeholders(repo)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


def did_you_mean(word: str, choices: list[str]) -> str | None:
    """The one close spelling of `word` among `choices` (difflib ratio >= 0.8), else None. difflib is
    imported only on this error path: the gate's clean path stays import-light."""
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.8)
    return close[0] if close else None


def text_findings(entry: Entry, file: str) -> list[Finding]:
    """Control, bidi and invisible characters in any text of the entry (keys and values), each named with
    its code point and where it is: the line of the field or list item and the character's position."""
    out: list[Finding] = []

    def check(text: str, where: str, line: int) -> None:
        m = BAD_TEXT.search(text)
        if m is None:
            return
        more = len(BAD_TEXT.findall(text)) - 1
        out.append(Finding(file, line, None,
                           f"entry {entry.index + 1}: {where} contains {char_name(m.group())} at character"
                           f" {m.start() + 1}" + (f" (and {more} more such character{'s' if more > 1 else ''})" if more else ""),
                           "delete it: it is invisible or changes how the text shows in PR comments and terminals"
                           " (in a quoted string, escapes such as \\e, \\0, \\u202e write it too); one line per"
                           " description item"))

    for key, value in entry.data.items():
        line = entry.key_lines.get(key, entry.line)
        if isinstance(key, str):
            check(key, f"the field name {key[:40]!r}", line)
        if isinstance(value, str):
            check(value, str(key), line)
        elif isinstance(value, list):
            for j, item in enumerate(value):
                if isinstance(item, str):
                    check(item, f"{key} item {j + 1}", entry.key_lines.get((key, j), line))
    return out


def entry_findings(entry: Entry, file: str) -> list[Finding]:
    """Schema and combination rules of one entry (not the pr-link mode rule, not key resolution)."""
    n, data, out = entry.index + 1, entry.data, []

    def at(key: str | None, message: str, hint: str) -> None:
        line = entry.key_lines.get(key, entry.line) if key else entry.line
        out.append(Finding(file, line, None, f"entry {n}: {message}", hint))

    meant: set[str] = set()  # required fields a misspelt key stands for: one error, not two
    for key in data:
        if key not in FIELDS:
            close = did_you_mean(str(key), [f for f in FIELDS if f not in data])
            if close:
                meant.add(close)
                at(key, f"unknown field {key!r}; did you mean {close!r}?", f"rename it to `{close}:`")
            else:
                at(key, f"unknown field {key!r}", f"the fields are {', '.join(FIELDS)}; check the spelling")
    for key in REQUIRED:
        if key not in data and key not in meant:
            at(None, f"the required field {key!r} is missing", f"add `  {key}:` to the entry")
    if "config-keys" in data:
        keys = data["config-keys"]
        if not isinstance(keys, list) or not keys:
            at("config-keys", "config-keys must be a non-empty list of config keys",
               "list each key on its own line: `    - <config-key>`")
        elif not _strings(keys):
            at("config-keys", "every config key must be a non-empty string", "quote keys that YAML reads as numbers or booleans")
    if "description" in data:
        desc = data["description"]
        if isinstance(desc, str):
            at("description", "description must be a list of strings, not a single string",
               "write it as a list: `  description:` then `    - \"...\"`")
        elif not isinstance(desc, list) or not desc:
            at("description", "description must be a non-empty list of strings", "add at least one `    - \"...\"` line")
        elif not _strings(desc):
            at("description", "every description item must be non-empty text", "quote items YAML reads as numbers, booleans or null")
        elif (size := sum(len(d) for d in desc)) > MAX_DESCRIPTION_CHARS:
            at("description", f"description is {size:,} characters; at most {MAX_DESCRIPTION_CHARS:,} are allowed "
                              "(GitHub holds 65,536 in a whole comment)",
               "say what changed and why in a few lines; link the details (an issue, the PR) instead of pasting them")
    if "pr-link" in data and not (isinstance(data["pr-link"], str) and data["pr-link"]):
        at("pr-link", "pr-link must be a link to the pull request", "write `  pr-link: XXX` until the PR exists")
    if "scenario-type" in data and data["scenario-type"] is not None:
        st = data["scenario-type"]
        if not isinstance(st, list) or not st:
            at("scenario-type", "scenario-type must be a non-empty list (or left out for all scenarios)",
               f"use items from: {', '.join(SCENARIO_TYPES)}")
        else:
            bad = [s for s in st if s not in SCENARIO_TYPES]
            if bad:
                at("scenario-type", f"unknown scenario-type {bad[0]!r}", f"use items from: {', '.join(SCENARIO_TYPES)}")
            elif len(set(st)) != len(st):
                at("scenario-type", "scenario-type lists a scenario twice", "list each scenario once")
    for key in OPTIONAL_BOOLS:
        if key in data and not isinstance(data[key], bool):
            at(key, f"{key} must be true or false, not {data[key]!r}", f"write `  {key}: true` or leave the field out")
    if "eval-min-prefill-ep" in data:
        ep = data["eval-min-prefill-ep"]
        if ep is not None and (isinstance(ep, bool) or not isinstance(ep, int) or ep < 1):
            at("eval-min-prefill-ep", f"eval-min-prefill-ep must be a whole number >= 1, not {ep!r}",
               "write e.g. `  eval-min-prefill-ep: 4`, or leave the field out")
    out += text_findings(entry, file)
    if data.get("append-only") is True:
        mixed = [k for k in ("evals-only", "all-evals") if data.get(k) is True]
        if isinstance(data.get("eval-min-prefill-ep"), int) and not isinstance(data.get("eval-min-prefill-ep"), bool):
            mixed.append("eval-min-prefill-ep")
        if mixed:
            at("append-only", f"append-only cannot be combined with eval selection fields ({', '.join(mixed)})",
               "an append-only entry runs only the new throughput points; put eval changes in a separate PR")
    return out


def key_findings(entry: Entry, file: str, master_keys: list[str], masters_label: str) -> tuple[list[str], list[Finding]]:
    """Resolve the entry's keys; a finding for every key or pattern that matches no master config."""
    keys = entry.data.get("config-keys")
    if not _strings(keys) or not keys:
        return [], []
    resolved, unmatched = resolve_keys(keys, master_keys)
    line = entry.key_lines.get("config-keys", entry.line)
    out = []
    for key in unmatched:
        if is_pattern(key):
            msg = f"entry {entry.index + 1}: the pattern {key!r} matches no config key in the master configs"
            hint = f"`*` matches any characters and `?` one character; the keys are in {masters_label}"
        else:
            close = did_you_mean(key, master_keys)
            msg = (f"entry {entry.index + 1}: config key {key!r} is not in the master configs"
                   + (f"; did you mean {close!r}?" if close else ""))
            hint = (f"write `    - {close}`" if close else
                    f"check the spelling against {masters_label}, or add the config there in this PR")
        out.append(Finding(file, entry.key_lines.get(("config-keys", keys.index(key)), line), None, msg, hint))
    return resolved, out


def link_findings(entry: Entry, file: str, repo: str, pr: int | None, local: bool) -> list[Finding]:
    """The pr-link of a new entry, by mode: PR (placeholder or own link), local (placeholder or any
    canonical link), main (canonical only)."""
    link = entry.data.get("pr-link")
    if not isinstance(link, str) or not link:
        return []  # reported by the schema rule
    n = entry.index + 1
    line = entry.key_lines.get("pr-link", entry.line)
    if pr is not None:
        expected = pr_url(repo, pr)
        if link == expected or is_placeholder(link, repo):
            return []
        return [Finding(file, line, None,
                        f"entry {n}: a new entry in PR #{pr} must link {expected!r} or use the placeholder XXX; found {link!r}",
                        f"write `  pr-link: {expected}` (or `XXX`, which `ci-tools changelog canonicalize --pr {pr}` rewrites)")]
    if local:
        if canonical_link(link, repo) or is_placeholder(link, repo):
            return []
        return [Finding(file, line, None, f"entry {n}: pr-link {link!r} is neither a pull-request link nor the placeholder",
                        f"write `  pr-link: XXX` until the PR exists, or `{pr_url(repo, '<number>')}`")]
    if canonical_link(link, repo):
        return []
    return [Finding(file, line, None,
                    f"entry {n}: a new main-branch entry must have a canonical pr-link; found {link!r}",
                    f"use {pr_url(repo, '<number>')}; run `ci-tools changelog canonicalize --pr <number>` on the PR before merging")]
