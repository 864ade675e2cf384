"""`/sweep approve <sha>` for fork PRs. decide.py: the approval and the head check (pure); flow.py:
the reply and `comment check-approval`.

May import: decide.py the core only (`ci_tools.prbot` core modules, `policy.labels`, `names`, `errors`);
flow.py also `ci_tools.github` and the other features' flows.
"""
