"""The ATOM plug-in (ci_tools/engines/atom.py): its commands, checked by ATOM's own parser built from its source
at each pinned release (tests/engines/sources.json), and the options it uses only where a release has them."""

from __future__ import annotations

import shlex

import pytest

from ci_tools.engines import ServeSpec, atom
from tests.engines.harness import options, parse_many, pinned_sources

RELEASES = pinned_sources()["atom"]
OLD, NEW = "0.1.3", "0.1.6rc1.dev323"


def spec(**kw) -> ServeSpec:
    base = dict(model_path="/models/org/m", served_model="org/m", host="0.0.0.0", port=8000, tp=8, ep=1,
                dp_attn=False)
    return ServeSpec(**{**base, **kw})


def test_the_command_is_atoms_openai_server():
    cmd = atom.server(spec(versions=(NEW,), args={"kv_cache_dtype": "fp8", "trust-remote-code": True}))
    assert cmd.launcher == ("python3", "-m", "atom.entrypoints.openai_server")
    assert cmd.args == ("--model", "/models/org/m", "--served-model-name", "org/m", "--host", "0.0.0.0",
                        "--server-port", "8000", "--tensor-parallel-size", "8", "--kv_cache_dtype", "fp8",
                        "--trust-remote-code")


@pytest.mark.parametrize("versions,name", [((NEW,), "org/m"), ((OLD,), "/models/org/m"), ((OLD, NEW), "/models/org/m"),
                                           ((), "/models/org/m")])
def test_the_served_name_is_the_model_path_before_served_model_name(versions, name):
    """ATOM before 0.1.6rc1.dev172 answers only to its --model value: the client must ask for that."""
    s = spec(versions=versions)
    assert atom.served_name(s) == name
    assert ("--served-model-name" in atom.server(s).args) == (name == "org/m")


@pytest.mark.parametrize("tp,ep,dpa,flags,problem", [
    (8, 1, False, [], ""),
    (8, 8, False, ["--enable-expert-parallel"], ""),
    (8, 8, True, ["--enable-expert-parallel", "--enable-dp-attention"], ""),
    (8, 1, True, ["--enable-dp-attention"], ""),
    (8, 4, False, [], "ep=4 with tp=8 cannot be expressed"),
])
def test_topology(tp, ep, dpa, flags, problem):
    s = spec(tp=tp, ep=ep, dp_attn=dpa, versions=(NEW,))
    problems = atom.topology_problems(s)
    assert (problem in problems[0]) if problem else problems == [], problems
    if not problem:
        args = list(atom.server(s).args)
        assert [a for a in args if a in ("--enable-expert-parallel", "--enable-dp-attention")] == flags


def test_pipeline_parallel_is_refused_on_a_release_without_it():
    assert "ATOM has --pipeline-parallel-size from 0.1.6rc1.dev195" in atom.topology_problems(spec(pp=2,
                                                                                                   versions=(OLD,)))[0]
    assert atom.topology_problems(spec(pp=2, versions=(NEW,))) == []


def test_synthetic_acceptance_is_atoms_own_flag_where_it_has_one():
    assert atom.synthetic_acceptance(2.5, (NEW,)) == ({}, {"spec-decode-acceptance-length": "2.5"}, [])
    env, args, problems = atom.synthetic_acceptance(2.5, (OLD,))
    assert not env and not args and "--spec-decode-acceptance-length" in problems[0]


def test_every_pinned_release_is_parsed_from_its_own_source():
    """Each pinned release's parser is ATOM's (its `python3 -m atom.entrypoints.openai_server` run to its
    parse_args): --served-model-name exists only from 0.1.6rc1.dev172, both spellings only from the
    main-line releases (FlexibleArgumentParser)."""
    has = {v: options("atom", v) for v in RELEASES}
    assert all("--server-port" in o and "--enable-dp-attention" in o for o in has.values())
    assert [v for v in RELEASES if "--served-model-name" in has[v]] == [v for v in RELEASES if atom.has(
        "served-model-name", (v,))] == ["0.1.6rc1.dev307", NEW]          # the plug-in's gate is the parsers'
    assert [v for v in RELEASES if "--spec-decode-acceptance-length" in has[v]] == [NEW]
    for option in atom.SINCE:           # every version gate of the plug-in is where the parsers change
        assert {v: f"--{option}" in has[v] for v in RELEASES} == {v: atom.has(option, (v,)) for v in RELEASES}, option
    assert "--kv-cache-dtype" in has[NEW] and "--kv-cache-dtype" not in has[OLD]


@pytest.mark.parametrize("version", RELEASES)
def test_every_topology_renders_a_command_its_release_parses(version):
    named = {}
    for tp, ep, dpa in [(8, 1, False), (8, 8, False), (8, 8, True), (8, 1, True), (4, 1, False), (2, 1, False)]:
        s = spec(tp=tp, ep=ep, dp_attn=dpa, versions=(version,),
                 args={"kv_cache_dtype": "fp8", "max-num-seqs": 64, "method": "mtp", "num-speculative-tokens": 1})
        named[f"tp{tp} ep{ep}{' dp-attn' if dpa else ''}"] = list(atom.server(s).args)
    results = parse_many("atom", version, list(named.values()))
    bad = [f"{n}: atom {version} rejects `{shlex.join(a)}`: {r.error}" for (n, a), r in zip(named.items(), results)
           if not r.ok]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("version,args,error", [
    (OLD, ["--model", "/m", "--kv-cache-dtype", "fp8"], "unrecognized arguments: --kv-cache-dtype"),
    (NEW, ["--model", "/m", "--kv_cache_dtype", "fp16"], "invalid choice: 'fp16'"),
    (NEW, ["--model", "/m", "--method", "eagle"], "invalid choice: 'eagle'"),
    (NEW, ["--model", "/m", "--tensor-parallel-size", "eight"], "invalid int value"),
    (OLD, ["--model", "/m", "--served-model-name", "x"], "unrecognized arguments: --served-model-name"),
])
def test_a_broken_flag_is_rejected_by_atoms_parser(version, args, error):
    result = parse_many("atom", version, [args])[0]
    assert not result.ok and error in result.error, result
