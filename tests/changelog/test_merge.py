"""canonicalize and resolve-conflict on bytes (spec §5 cases 120-125), plus a property test."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ci_tools.changelog.lint import Mode, lint_change
from ci_tools.changelog.merge import canonicalize, entry_block, resolve_conflict
from ci_tools.changelog.parse import parse_entries
from ci_tools.errors import InputError

from .helpers import LINK, REPO, entry, history

F = "log.yaml"
OWN = f"{LINK}/42"


def test_canonicalize_rewrites_only_the_new_placeholder():  # case 120
    base = entry(link="XXX")  # a historical placeholder stays
    head = base + b"\n" + entry(keys=("cfg-b",), link="XXX")
    out = canonicalize(base, head, file=F, repo=REPO, pr=42)
    assert out.startswith(base)
    entries = parse_entries(out, F)
    assert [e.data["pr-link"] for e in entries] == ["XXX", OWN]
    assert out == head.replace(b"  pr-link: XXX\n", f"  pr-link: {OWN}\n".encode()).replace(
        f"  pr-link: {OWN}\n".encode(), b"  pr-link: XXX\n", 1)


def test_canonicalize_changes_no_other_byte():
    base = history(2)
    head = base + b"\n" + entry(link=f"{LINK}/XXX", extra="  evals-only: true\n") + b"\n" + entry(link=OWN)
    out = canonicalize(base, head, file=F, repo=REPO, pr=42)
    assert out == head.replace(f"{LINK}/XXX".encode(), OWN.encode())
    assert canonicalize(base, out, file=F, repo=REPO, pr=42) == out  # idempotent


def test_canonicalize_refuses_an_edit_to_history():  # case 121
    base = history(2)
    head = base.replace(b'"Change 1."', b'"Change 1."  ') + b"\n" + entry()
    with pytest.raises(InputError) as exc:
        canonicalize(base, head, file=F, repo=REPO, pr=42)
    assert exc.value.message == "log.yaml does not pass the changelog gate for PR #42; fix it first"
    assert "appended entries changed historical bytes at line 4" in exc.value.findings[0].message


def test_canonicalize_refuses_another_prs_link():
    base = history(1)
    with pytest.raises(InputError) as exc:
        canonicalize(base, base + b"\n" + entry(link=f"{LINK}/7"), file=F, repo=REPO, pr=42)
    assert "must link" in exc.value.findings[0].message


def test_resolve_keeps_mains_bytes_and_appends_the_pr_entry():  # case 122
    base = history(2)
    pr = base + b"\n" + entry(keys=("cfg-b",), desc=("PR change.",))
    main = base + b"  \n" + entry(desc=("Main change.",), link=f"{LINK}/40")
    out = resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
    assert out.startswith(main)
    assert out[len(main):].startswith(b"\n- config-keys:")
    assert b"\n  \n" in out  # main's historical whitespace line is kept
    descs = [e.data["description"][0] for e in parse_entries(out, F)]
    assert descs == ["Change 1.", "Change 2.", "Main change.", "PR change."]
    assert parse_entries(out, F)[-1].data["pr-link"] == OWN


def test_resolve_applies_a_pr_link_correction_to_main():  # case 123
    old = "https://github.com/NVIDIA/InferenceMAX/pull/1722"
    base = entry(link=old) + b"\n" + entry(desc=("Second.",), link=f"{LINK}/2")
    pr = base.replace(old.encode(), f"{LINK}/1722".encode())
    main = base + b"\n" + entry(desc=("Main.",), link=f"{LINK}/50")
    out = resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
    assert out == main.replace(old.encode(), f"{LINK}/1722".encode())


def test_resolve_refuses_when_main_already_has_the_entry():  # case 124
    base = history(1)
    new = entry(keys=("cfg-b",), desc=("Same.",))
    pr = base + b"\n" + new
    main = base + b"\n" + entry(keys=("cfg-b",), desc=("Same.",), link=OWN)
    with pytest.raises(InputError) as exc:
        resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
    assert exc.value.message.startswith("the PR has no changelog contribution remaining after merging main")


def test_resolve_keeps_an_identical_entry_of_another_pr():
    # Unlike InferenceX's preparer (W33), the same text under another PR's link is not this PR's entry.
    base = history(1)
    pr = base + b"\n" + entry(keys=("cfg-b",), desc=("Re-run.",))
    main = base + b"\n" + entry(keys=("cfg-b",), desc=("Re-run.",), link=f"{LINK}/41")
    out = resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
    assert [e.data["pr-link"] for e in parse_entries(out, F)][-2:] == [f"{LINK}/41", OWN]


def test_resolve_two_pr_entries():  # case 125
    base = history(1)
    pr = base + b"\n" + entry(desc=("P1.",)) + b"\n" + entry(desc=("P2.",), link=OWN)
    main = base + b"\n" + entry(desc=("M1.",), link=f"{LINK}/9")
    out = resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
    assert len(parse_entries(out, F)) == 4
    assert out.count(b"\n\n- config-keys:") == 3
    assert b"\n\n\n" not in out and out.endswith(b"\n") and not out.endswith(b"\n\n")


@pytest.mark.parametrize("pr_side,message", [
    (history(2).replace(b"Change 1.", b"Change one.") + b"\n" + entry(),
     "the PR's version of the changelog is not a clean change of the merge base (it edits history or breaks the layout);"
     " resolve by hand"),
    (history(2), "the PR's version of the changelog neither appends an entry nor corrects a pr-link; nothing to preserve:"
                 " take main's version (`git checkout --theirs log.yaml`)"),
])
def test_resolve_refusals(pr_side, message):
    base = history(2)
    main = base + b"\n" + entry(desc=("Main.",), link=f"{LINK}/9")
    with pytest.raises(InputError) as exc:
        resolve_conflict(base, pr_side, main, file=F, repo=REPO, pr=42)
    assert exc.value.message == message


def test_resolve_refuses_a_placeholder_twin_on_main():
    base = history(1)
    pr = base + b"\n" + entry(desc=("Twin.",))
    main = base + b"\n" + entry(desc=("Twin.",), link="XXX")
    with pytest.raises(InputError) as exc:
        resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
    assert "cannot tell whether it is this PR's" in exc.value.message


def test_entry_block_excludes_trailing_blank_lines():
    content = entry() + b"  \n\n" + entry(keys=("cfg-b",))
    start, end = entry_block(content, 0)
    assert content[start:end] == entry()


# -- property: random interleavings never lose or duplicate an entry --------------------------
def _entries(tag: str, n: int, link_of) -> list[bytes]:
    return [entry(keys=("cfg-a",), desc=(f"{tag} {i}.",), link=link_of(i)) for i in range(n)]


@settings(max_examples=150, deadline=None)
@given(n_base=st.integers(0, 3), n_main=st.integers(0, 4), n_pr=st.integers(1, 4),
       main_seps=st.lists(st.sampled_from([b"\n", b"  \n", b" \n"]), min_size=4, max_size=4),
       pr_links=st.lists(st.sampled_from(["XXX", f"{LINK}/XXX", OWN]), min_size=4, max_size=4),
       merged=st.lists(st.booleans(), min_size=4, max_size=4), data=st.data())
def test_resolution_never_loses_or_duplicates(n_base, n_main, n_pr, main_seps, pr_links, merged, data):
    base_entries = _entries("base", n_base, lambda i: f"{LINK}/{i + 1}")
    base = b"\n".join(base_entries)
    pr_entries = _entries("pr", n_pr, lambda i: pr_links[i])
    # main appended its own entries and, possibly, some of the PR's (already canonicalised), in any order
    main_own = _entries("main", n_main, lambda i: f"{LINK}/{100 + i}")
    taken = [i for i in range(n_pr) if merged[i]]
    pool = main_own + [entry(keys=("cfg-a",), desc=(f"pr {i}.",), link=OWN) for i in taken]
    order = data.draw(st.permutations(range(len(pool))))
    main = base
    for k, j in enumerate(order):  # historical whitespace separators on main are fine
        main += (main_seps[k % 4] if main else b"") + pool[j]
    pr = base + (b"\n" if base else b"") + b"\n".join(pr_entries)
    if len(taken) == n_pr:
        with pytest.raises(InputError, match="no changelog contribution remaining"):
            resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
        return
    out = resolve_conflict(base, pr, main, file=F, repo=REPO, pr=42)
    assert out.startswith(main)
    descs = [e.data["description"][0] for e in parse_entries(out, F)]
    main_descs = [e.data["description"][0] for e in parse_entries(main, F)] if main else []
    appended = [f"pr {i}." for i in range(n_pr) if i not in taken]
    assert descs == main_descs + appended
    assert sorted(set(descs)) == sorted(descs), "no entry twice"
    assert set(descs) == {f"base {i}." for i in range(n_base)} | {f"main {i}." for i in range(n_main)} | {
        f"pr {i}." for i in range(n_pr)}, "no entry lost"
    links = {e.data["description"][0]: e.data["pr-link"] for e in parse_entries(out, F)}
    assert all(links[f"pr {i}."] == OWN for i in range(n_pr))
    check = lint_change(main, out, file=F, mode=Mode(REPO, pr=42), master_keys=None)
    assert check.ok and len(check.added) == len(appended)
