"""The JSON Schemas (2020-12) of every file a benchmark repository keeps: package data only.

They are the structural contract `config validate` and the gate check, and what editors validate
the shipped files against (yaml-language-server, `tests/editors/`). Read through
`ci_tools.resources`; `ci_tools/config/schemas.py` compiles them and words their errors.

May import: nothing (no Python code lives here).
"""
