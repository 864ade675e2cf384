"""The welcome comment. decide.py: what it says about the labels (pure); flow.py: `bot welcome`.

May import: decide.py the core only (`ci_tools.prbot` core modules, `policy.labels`, `names`, `errors`);
flow.py also `ci_tools.github` and the other features' flows.
"""
