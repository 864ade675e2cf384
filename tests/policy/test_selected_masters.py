"""Parsing only the master entries a change selects (the planner's fast path) must equal a full parse."""

import yaml

from ci_tools.config.masters import read_selected_blobs, split_entries


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
    from ci_tools.yamlio import load_data_fast, load_yaml_text
    for name in ("nvidia-master.yaml", "amd-master.yaml", "runners.yaml"):
        text = (shared / "corpus" / "inferencex" / "configs" / name).read_text()
        assert load_data_fast(text, name) == load_yaml_text(text, name).data


import pytest  # noqa: E402

from ci_tools.errors import InputError  # noqa: E402


@pytest.mark.parametrize("text, message", [("a: 1\na: 2\n", "duplicate key"), ("a: [1\n", "malformed YAML"),
                                           ("a:\n\tb: 1\n", "TAB"), ("? [1]\n: 2\n", "plain value")])
def test_fast_loader_defers_problems_to_the_located_loader(text, message):
    from ci_tools.yamlio import load_data_fast
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
