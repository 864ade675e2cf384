"""The git adapter against real repositories."""

from __future__ import annotations

import pytest

from ci_tools.errors import InputError
from ci_tools.gitio import Git

from .helpers import commit, git, init_repo, write


@pytest.fixture
def repo(tmp_path):
    r = init_repo(tmp_path / "r")
    write(r, "a.txt", b"one\n")
    write(r, "dir/b.yaml", b"b\n")
    commit(r, "first", tag="v1")
    write(r, "a.txt", b"two\r\n\0")
    write(r, "dir/c-master.yaml", b"c\n")
    commit(r, "second", tag="v2")
    return r


def test_show_returns_exact_bytes_or_none(repo):
    g = Git(repo)
    assert g.show("v1", "a.txt") == b"one\n"
    assert g.show("v2", "a.txt") == b"two\r\n\0"
    assert g.show("v1", "dir/c-master.yaml") is None
    assert g.show("v1", "dir") is None  # a tree is not a file
    assert g.show_many("v2", ["a.txt", "nope", "dir/b.yaml"]) == {"a.txt": b"two\r\n\0", "nope": None, "dir/b.yaml": b"b\n"}


@pytest.mark.parametrize("ref", ["nope", "v1~5", "0" * 40])
def test_unknown_ref_is_an_input_error_naming_it(repo, ref):
    with pytest.raises(InputError) as exc:
        Git(repo).show(ref, "a.txt")
    assert exc.value.message.startswith(f"unknown git ref {ref!r}: no commit by that name in {repo.resolve()}")
    assert exc.value.exit_code == 2  # a missing input, like a missing file


def test_option_like_ref_is_refused(repo):
    with pytest.raises(InputError) as exc:
        Git(repo).rev_parse("--all")
    assert exc.value.exit_code == 2


def test_not_a_repository(tmp_path):
    with pytest.raises(InputError) as exc:
        Git(tmp_path).rev_parse("HEAD")
    assert "is not inside a git repository" in exc.value.message


def test_refs_files_and_remote(repo):
    g = Git(repo)
    v1, v2 = g.rev_parse("v1"), g.rev_parse("v2")
    assert len(v1) == 40 and v1 != v2
    assert g.changed_files("v1", "v2") == ["a.txt", "dir/c-master.yaml"]
    assert g.merge_base("v1", "v2") == v1
    assert g.ls_files("v2", "dir") == ["dir/b.yaml", "dir/c-master.yaml"]
    assert g.remote_url() is None
    git(repo, "remote", "add", "origin", "https://github.com/acme/bench.git")
    assert g.remote_url() == "https://github.com/acme/bench.git"
    assert g.has_commits() and g.toplevel() == repo.resolve()


def test_index_stages_of_a_conflict(repo):
    g = Git(repo)
    git(repo, "checkout", "-q", "-b", "side", "v1")
    write(repo, "a.txt", b"side\n")
    commit(repo, "side")
    assert git(repo, "merge", "v2", check=False).returncode != 0
    assert g.unmerged_paths() == ["a.txt"]
    assert (g.stage(1, "a.txt"), g.stage(2, "a.txt"), g.stage(3, "a.txt")) == (b"one\n", b"side\n", b"two\r\n\0")
    assert g.stage(1, "dir/b.yaml") is None  # not conflicted: only stage 0
    assert g.show_staged("dir/b.yaml") == b"b\n"
    with pytest.raises(ValueError):
        g.stage(0, "a.txt")


def test_batched_reads(repo):
    g = Git(repo)
    assert g.rev_parse_many(["v1", "v2", "v1"]) == [g.rev_parse("v1"), g.rev_parse("v2"), g.rev_parse("v1")]
    assert g.read([("v1", "a.txt"), ("v2", "a.txt"), ("v2", "nope")]) == {
        ("v1", "a.txt"): b"one\n", ("v2", "a.txt"): b"two\r\n\0", ("v2", "nope"): None}
    with pytest.raises(InputError) as exc:
        g.read([("v1", "a.txt"), ("bad-ref", "a.txt")])
    assert exc.value.message.startswith("unknown git ref 'bad-ref'")


def test_worktree_changes_and_relative_reads_from_a_subdirectory(repo):
    """What `config validate --base` asks, run from a subdirectory: paths relative to it, untracked
    files included, ignored ones not."""
    write(repo, "dir/b.yaml", b"changed\n")
    write(repo, "dir/new.yaml", b"new\n")
    write(repo, ".gitignore", b"*.log\n")
    write(repo, "dir/x.log", b"ignored\n")
    write(repo, "a.txt", b"outside dir\n")
    g = Git(repo / "dir")
    assert g.worktree_changes("v1") == ["b.yaml", "c-master.yaml", "new.yaml"]
    assert g.show_relative_many("v1", ["b.yaml", "c-master.yaml"]) == {"b.yaml": b"b\n", "c-master.yaml": None}


def test_commit_message_and_named_blobs(repo):
    g = Git(repo)
    assert g.commit_message("v2") == "second\n\n"
    sha = g.rev_parse("v1")
    assert g.cat_files([f"{sha}:a.txt", f"{sha}:nope"], ["a", "b"]) == {"a": b"one\n", "b": None}
    g.known_commit("f" * 40)
    assert g.rev_parse("f" * 40) == "f" * 40  # remembered, not asked


def test_git_missing_is_its_own_error(repo, monkeypatch):
    from ci_tools.gitio import GitMissing

    monkeypatch.setenv("PATH", str(repo / "no-bin"))
    with pytest.raises(GitMissing):
        Git(repo).rev_parse("HEAD")
