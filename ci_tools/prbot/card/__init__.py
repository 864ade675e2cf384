"""The PR status card. decide.py: sections, patching, progress per family (pure); shell.py: the
re-reading section writer; flow.py: `bot status-card` and the card updates of other flows.

May import: decide.py the core only (`ci_tools.prbot` core modules, `policy.labels`, `names`, `errors`);
flow.py and shell.py also `ci_tools.github` and the other features' flows.
"""
