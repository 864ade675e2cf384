"""`/stage-results` and ingest on main. decide.py: rules, payloads, callback validation (pure);
flow.py: the staging reply, `stage callback`, `results dispatch`.

May import: decide.py the core only (`ci_tools.prbot` core modules, `policy.labels`, `names`, `errors`);
flow.py also `ci_tools.github` and the other features' flows.
"""
