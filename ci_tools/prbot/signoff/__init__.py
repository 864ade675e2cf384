"""CODEOWNER sign-off. decide.py: ownership, checklist, verdict, carry-over (pure); flow.py: `signoff
verify` and `signoff record`.

May import: decide.py the core only (`ci_tools.prbot` core modules, `policy.labels`, `names`, `errors`);
flow.py also `ci_tools.github` and the other features' flows.
"""
