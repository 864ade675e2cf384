"""The benchmark repository's data model: master configs, runners.yaml, recipes.

Entry points for other areas (import the submodule; nothing is re-exported here, so importing
`ci_tools.config` stays free):
- `load.read_masters` / `read_runners` (files), `masters.MasterIndex` (bytes, e.g. from git): reading
  without schema validation.
- `validate.validate_root(root, change)` / `validate_files(masters, runners, root, change)`: every
  finding of `config validate` as a `Report` (`.findings`, `.errors`, `.warnings`, `.ok`).
- `crossfile.Change(keys, files)`: which entries a change touches; `load.change_since` builds it
  from a git base revision.
- `rules.search_spaces`, `rules.entry_points`, `points.search_space_concs`: walking search spaces.
- `schemas.check(doc, data, "master"|"runners"|"recipe", ref)`: schema findings for one document.
"""
