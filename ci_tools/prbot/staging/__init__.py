"""`/stage-results` and ingest on main. decide.py: rules, payloads, callback validation (pure);
flow.py: the staging reply, `stage callback`, `results dispatch`."""
