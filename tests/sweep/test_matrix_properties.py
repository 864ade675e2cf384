"""Properties of expansion, filters and trimming over random search spaces."""

from hypothesis import given, settings, strategies as st

from ci_tools.sweep import buckets as bk
from ci_tools.sweep.matrix import Filters, expand

conc_range = st.tuples(st.integers(1, 300), st.integers(1, 300)).map(lambda t: {"conc-start": min(t), "conc-end": max(t)})
conc_list = st.lists(st.integers(1, 500), min_size=1, max_size=6).map(lambda l: {"conc-list": l})
search = st.fixed_dictionaries({"tp": st.sampled_from([1, 2, 4, 8]), "ep": st.sampled_from([None, 1, 8]),
                                "dp-attn": st.sampled_from([None, False, True])})


def entry(spaces, multinode=False):
    if multinode:
        spaces = [{k: v for k, v in s.items() if k.startswith("conc")} | {
            "prefill": {"num-worker": 1, "tp": s["tp"], "ep": 1, "dp-attn": False},
            "decode": {"num-worker": 1, "tp": s["tp"], "ep": 1, "dp-attn": False}} for s in spaces]
    return {"k": {"image": "i", "model": "m", "model-prefix": "p", "precision": "fp4", "framework": "f",
                  "runner": "r", "multinode": multinode, "disagg": multinode, "kv-p2p-transfer": "nixl" if multinode else None,
                  "scenarios": {"fixed-seq-len": [{"isl": 8192, "osl": 1024, "search-space": spaces}]}}}


spaces = st.lists(st.tuples(search, st.one_of(conc_range, conc_list)).map(lambda t: {**t[0], **t[1]}),
                  min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(spaces=spaces, lo=st.integers(1, 200), span=st.integers(0, 300), multinode=st.booleans())
def test_conc_filters_bound_every_row(spaces, lo, span, multinode):
    hi = lo + span
    rows = expand(entry(spaces, multinode), {}, Filters(min_conc=lo, max_conc=hi))
    for r in rows:
        concs = r.row["conc"] if isinstance(r.row["conc"], list) else [r.row["conc"]]
        assert concs and all(lo <= c <= hi for c in concs)


@settings(max_examples=150, deadline=None)
@given(spaces=spaces, multinode=st.booleans())
def test_trim_keeps_one_lowest_point_per_recipe(spaces, multinode):
    rows = expand(entry(spaces, multinode), {}, Filters())
    trimmed = bk.trim(rows)
    if multinode:
        assert len(trimmed) == len(rows)
        assert all(t.row["conc"] == [min(r.row["conc"])] for t, r in zip(trimmed, rows))
        return
    fp = {bk.recipe_fingerprint(r.row) for r in rows}
    assert len(trimmed) == len(fp)
    for t in trimmed:
        same = [r.row["conc"] for r in rows if bk.recipe_fingerprint(r.row) == bk.recipe_fingerprint(t.row)]
        assert t.row["conc"] == min(same)


@settings(max_examples=100, deadline=None)
@given(spaces=spaces, multinode=st.booleans())
def test_canaries_take_exactly_one_point_per_family(spaces, multinode):
    rows = expand(entry(spaces, multinode), {}, Filters())
    buckets = {b: [] for b in bk.BUCKETS}
    for r in rows:
        buckets[bk.bench_bucket(r.row)].append(r)
    before = sum(len(r.row["conc"]) if isinstance(r.row["conc"], list) else 1 for r in rows)
    canaries, rest = bk.select_canaries(buckets, fast_seconds=1200)
    after = sum(len(r.row["conc"]) if isinstance(r.row["conc"], list) else 1 for rs in rest.values() for r in rs)
    assert len(canaries) == 1 and before - after == 1
    lowest = min(c for r in rows for c in (r.row["conc"] if isinstance(r.row["conc"], list) else [r.row["conc"]]))
    got = canaries[0].row["conc"]
    assert (got[0] if isinstance(got, list) else got) == lowest
