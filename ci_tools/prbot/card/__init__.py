"""The PR status card. decide.py: sections, patching, progress per family (pure); shell.py: the
re-reading section writer; flow.py: `bot status-card` and the card updates of other flows."""
