from ci_tools.sweep.load import load_policy


def test_shipped_policy_loads(repo_root):
    policy = load_policy(repo_root)
    assert policy.primaries_in(["full-sweep-fail-fast", "all-evals", "bug"]) == ["full-sweep-fail-fast"]
    assert policy.reuse_blockers_in(["evals-only", "agentx-fast", "all-evals"]) == ["agentx-fast", "evals-only"]
    assert "sweep-enabled" not in policy.reusable_primaries()
    assert policy.primary["full-sweep-fail-fast"].recommended
