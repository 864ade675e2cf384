"""A Dynamo parser run forked from fork_host.py answers exactly as the same run in a process of its own
(tests/engines/harness.py: dynamo_forked, dynamo_process), so the tests that fork it check what they did.

benchmarks/dynamo_forks.py compares every run the suite makes; here, one of each outcome: a worker that does
not import, and one that does, refusing one command and taking another."""

from __future__ import annotations

import pytest

from tests.engines.harness import dynamo_forked, dynamo_process, dynamo_run, fork_host


@pytest.mark.heavy      # each run twice: seconds of CPU per run
@pytest.mark.parametrize("dynamo,parser,engine,argvs", [
    ("1.3.0.post1", "dynamo.sglang", ("sglang", "0.5.21"), [["--model-path", "/models/m"]]),
    ("1.6.1", "dynamo.vllm", ("vllm", "0.33.0"), [["--model", "/models/m", "--tensor-paralel-size", "4"],
                                                  ["--model", "/models/m", "--max-num-seqs", "8"]]),
], ids=["does-not-import", "refuses-and-takes"])
def test_a_forked_run_answers_as_its_own_process(dynamo, parser, engine, argvs):
    # all that a test reads of a run: whether it built, the last line of its error, each verdict and message,
    # and the parser's own first line (its version, options, kinds, the modules stood in for, its files)
    own = dynamo_run(dynamo, parser, engine, argvs, start=dynamo_process)
    assert dynamo_run(dynamo, parser, engine, argvs, start=dynamo_forked) == own
    assert (own.built, [r["ok"] for r in own.results]) in ((False, []), (True, [False, True])), own


def test_a_folder_that_would_shadow_a_module_imported_before_the_fork_is_refused(tmp_path):
    """A child whose wheel folders hold their own torch would not be what a process of its own is."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("")
    code, _, stderr = fork_host().run("dynamo.frontend", [tmp_path], [[]])
    assert code == 3 and f"{tmp_path / 'torch'} would shadow a module imported before the fork" in stderr, stderr


def test_a_fork_host_that_died_is_started_again():
    """A host killed under one test (out of memory) fails that test only: the next run gets a new host."""
    host = fork_host()
    host.proc.kill()
    host.proc.wait()
    again = fork_host()
    assert again is not host and again.proc.poll() is None
