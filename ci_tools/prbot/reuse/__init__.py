"""`/use` run pinning. decide.py: who may authorise reuse, which run, whether it still may be (pure);
flow.py: `/use` replies and `reuse resolve`.

May import: decide.py the core only (`ci_tools.prbot` core modules, `policy.labels`, `names`, `errors`);
flow.py also `ci_tools.github` and the other features' flows.
"""
