"""The PR-description check. decide.py: disclosure and checklist (pure); flow.py: `bot pr-body`.

May import: decide.py the core only (`ci_tools.prbot` core modules, `policy.labels`, `names`, `errors`);
flow.py also `ci_tools.github` and the other features' flows.
"""
