"""The welcome comment. decide.py: what it says about the labels (pure); flow.py: `bot welcome`."""
