"""Parsing only the master entries a change selects (the planner's fast path) must equal a full parse."""

import yaml

from ci_tools.config.masters import read_selected_blobs
from ci_tools.yaml.scan import split_entries


def test_split_matches_full_parse_on_the_corpus(shared):
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        data = (shared / "corpus" / "inferencex" / "configs" / name).read_bytes()
        parts = split_entries(data)
        full = yaml.load(data, Loader=yaml.CSafeLoader)
        assert parts is not None and [k for k, _, _ in parts] == list(full)
        for key, line, chunk in parts:
            assert yaml.load(chunk, Loader=yaml.CSafeLoader) == {key: full[key]}
            assert data.split(b"\n")[line - 1].startswith(key.encode() + b":")


def test_only_selected_entries_are_parsed(shared):
    base = shared / "corpus" / "inferencex" / "configs"
    blobs = [(n, (base / n).read_bytes()) for n in ("amd-master.yaml", "nvidia-master.yaml")]
    seen = []

    def wanted(keys):
        seen.extend(keys)
        return [keys[3], keys[-1]]

    ms = read_selected_blobs(blobs, wanted)
    assert len(seen) == 208 and list(ms.entries) == [seen[3], seen[-1]] and ms.keys() == seen
    full = yaml.load(blobs[1][1], Loader=yaml.CSafeLoader)
    assert ms.entries[seen[-1]] == full[seen[-1]]
    line, _ = ms.origin[seen[-1]].mark((seen[-1],))
    assert blobs[1][1].split(b"\n")[line - 1].startswith(seen[-1].encode())


def test_unusual_shapes_fall_back_to_a_full_parse():
    anchored = b"a: &x\n  image: i\nb:\n  <<: *x\n"
    assert split_entries(anchored) is None
    ms = read_selected_blobs([("m.yaml", anchored)], lambda keys: ["b"])
    assert ms.entries["b"] == {"image": "i"}
    assert split_entries(b"a: 1\n") is None          # scalar on the key line
    assert split_entries(b"'a':\n  x: 1\n") is None  # quoted key
    assert split_entries(b"# c\na:\n  x: 1\n\nb:\n  y: 2\n") == [("a", 2, b"a:\n  x: 1\n\n"), ("b", 5, b"b:\n  y: 2\n")]


def test_fast_loader_equals_located_loader(shared):
    from ci_tools.yaml.located import load_yaml_text
    from ci_tools.yaml.fast import load_data_fast
    for name in ("nvidia-master.yaml", "amd-master.yaml", "runners.yaml"):
        text = (shared / "corpus" / "inferencex" / "configs" / name).read_text()
        assert load_data_fast(text, name) == load_yaml_text(text, name).data


import pytest  # noqa: E402

from ci_tools.errors import InputError  # noqa: E402


@pytest.mark.parametrize("text, message", [("a: 1\na: 2\n", "duplicate key"), ("a: [1\n", "malformed YAML"),
                                           ("a:\n\tb: 1\n", "TAB"), ("? [1]\n: 2\n", "plain value")])
def test_fast_loader_defers_problems_to_the_located_loader(text, message):
    from ci_tools.yaml.fast import load_data_fast
    with pytest.raises(InputError) as exc:
        load_data_fast(text, "m.yaml")
    assert message in exc.value.findings[0].message and exc.value.findings[0].line


def test_matrix_duplicate_key_across_files_is_located(tmp_path, capsys):
    from ci_tools.cli import main
    a, b = tmp_path / "a-master.yaml", tmp_path / "b-master.yaml"
    entry = "k:\n  image: i\n"
    a.write_text(entry)
    b.write_text("# x\n" + entry)
    with pytest.raises(SystemExit) as exc:
        main(["matrix", "full-sweep", "--config-file", str(a), "--config-file", str(b)])
    err = capsys.readouterr().err
    assert exc.value.code == 1 and "b-master.yaml:2" in err and "defined twice" in err


# -- the fast reader declines, the whole-file reader answers the same -------------------------------
COMMENTED = b"""# yaml-language-server: $schema=x
# images: rocm/sgl-dev:*-DSv4 & friends; <<: *defaults is not used here
a:
  image: "lmsysorg/sglang:v0.5 # not a comment"   # trailing *star &amp <<merge "quoted"
  # a comment line with *alias, &anchor, <<: *x and 'quotes' and "double quotes"
  model: 'it''s quoted, "twice"'
  notes: "<< & * inside a string"
  list: [1, 2]   # see *1 and &2
b:
  image: x   #   'half-quoted *
  search: |
    # inside a block scalar: *x &y << "q"
    text
c:
  image: plain
"""


def _same_everywhere(blobs, keys):
    from ci_tools.config.masters import MasterIndex

    fast, full = MasterIndex(blobs), MasterIndex(blobs, fast=False)
    a, b = fast.select(keys), full.select(keys)
    assert fast.keys == full.keys and a.entries == b.entries
    assert a.entries == {k: v for k, v in yaml.safe_load(blobs[0][1]).items() if k in keys}
    for k in keys:
        for path in [(k,)] + [(k, f) for f in a.entries[k]]:
            assert a.origin[k].mark(path) == b.origin[k].mark(path), path
    return fast


def test_comments_with_alias_like_text_give_the_full_parse_result():
    from ci_tools.config.masters import MasterIndex

    # a trailing comment with `*x` makes the fast reader decline the file: the result is the same
    fast = _same_everywhere([("m.yaml", COMMENTED)], ["a", "c"])
    assert fast.split_files == []
    # comment-only lines alone no longer decline it (the real amd-master.yaml case, `rocm/sgl-dev:*-DSv4`)
    only_lines = b"".join(line.split(b"   #")[0].rstrip() + b"\n" if not line.lstrip().startswith(b"#") else line
                          for line in COMMENTED.splitlines(keepends=True))
    assert b"*-DSv4" in only_lines and b"&anchor" in only_lines and b"<<: *x" in only_lines
    fast = _same_everywhere([("m.yaml", only_lines)], ["a", "b"])
    assert fast.split_files == ["m.yaml"]
    # wanted() is called exactly once on either path, with every key
    for blob in (COMMENTED, only_lines):
        calls = []
        ms = read_selected_blobs([("m.yaml", blob)], lambda keys: calls.append(list(keys)) or ["b"])
        assert calls == [["a", "b", "c"]] and list(ms.entries) == ["b"]
    assert MasterIndex([("m.yaml", COMMENTED)]).select(["nope"]).entries == {}


def test_a_selected_block_that_does_not_parse_alone_falls_back():
    # a quoted value continued on a column-1 line that looks like a key: the blocks split wrongly
    blob = b'a:\n  image: "one\nb: two"\n  model: m\nc:\n  image: i\n'
    assert yaml.safe_load(blob) == {"a": {"image": "one b: two", "model": "m"}, "c": {"image": "i"}}
    _same_everywhere([("m.yaml", blob)], ["a"])


def test_anchors_across_entries_fall_back():
    blob = b"a: &base\n  image: i\n  model: m\nb:\n  <<: *base\n  model: n\n"
    _same_everywhere([("m.yaml", blob)], ["b"])
