"""The benchmark repository's data model: master configs, runners.yaml, recipes.

Entry points for other areas (import the submodule; nothing is re-exported here, so importing
`ci_tools.config` stays free):
- `load`: the shell. `read_masters` / `read_runners` / `load_recipe` read files without schema
  validation; `load_sources` + `validate.check` (or `validate_root` / `validate_files`, which do both)
  give every finding of `config validate` as a `Report` (`.findings`, `.errors`, `.warnings`, `.ok`).
- `masters.merge_master_docs`, `masters.MasterIndex`: master data from already-read documents or blobs.
- `crossfile.Change(keys, files)`: which entries a change touches; `load.change_since` builds it
  from a git base revision.
- `rules.search_spaces`, `rules.entry_points`, `points.search_space_concs`: walking search spaces.
- `schemas.check(doc, data, "master"|"runners"|"recipe", ref)`: schema findings for one document.

May import: `ci_tools.errors`, `ci_tools.names`, the YAML readers (documents with line marks),
`ci_tools.resources` (the packaged JSON Schemas) and `ci_tools.engines` core modules; nothing of a
higher floor (docs/architecture.md, "The package stack"): the checks `config validate` runs for sweep,
evals and runner are theirs, passed into `validate.check` by the command. Only `load.py` touches
files and git (through `ci_tools.gitio`); every other module is pure.
"""
