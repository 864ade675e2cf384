"""The pull-request bot: comment commands, reuse (`/use`), staging, fork approvals, CODEOWNER
sign-off, the status card, the welcome and the PR-description check.

Shared here: `commands.py` (the comment grammar, the permission each command needs and the help
registry), `messages.py` (every word the bot writes), `sticky.py` (markers and the bot's state line),
`context.py` (the PR facts a flow computes once), `shell.py` (settings, the lazy client, the sticky
write) and `flow.py` (`comment handle`: one permission check per comment, then each command's feature
flow). Each feature is a folder with `decide.py` (pure, table-tested) and `flow.py` (the I/O, through
the few client methods it declares).

May import: core modules anywhere in `ci_tools` (`github.models`, the plain PR, comment, run and
timeline facts; `sweep.labels`, `evals.gate`, `names`, `errors`). Only `shell.py`, `flow.py` and the
features' `flow.py`/`shell.py` may import the rest of `ci_tools.github`; `tests/test_layers.py`
checks it.
"""
