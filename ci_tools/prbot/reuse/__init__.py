"""`/use` run pinning. decide.py: who may authorise reuse, which run, whether it still may be (pure);
flow.py: `/use` replies and `reuse resolve`."""
