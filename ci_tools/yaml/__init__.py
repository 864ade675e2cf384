"""All YAML reading of ci-tools, one module per need (import the submodule; nothing is re-exported,
so importing the package costs nothing and PyYAML is imported by the first parse that needs it):

- `located`: text -> `YamlDoc` (data + the line and column of every key and value), strict hygiene
  (duplicate keys, TAB/NUL/BOM, tags on collections) and the hostile-input limits (alias budget,
  nesting depth, recursive aliases). Pure.
- `fast`: text -> data without marks for hot whole-file reads (`load_data_fast`): `load_plain`, a
  line reader of the plain block YAML configs are written in, then PyYAML's C loader; anything odd is
  handed to `located`, so errors are the same. Pure.
- `scan`: the one top-level key scanner (master config keys and per-entry blocks by column 1). Pure.
- `readings`: plain scalars YAML 1.1 (PyYAML) and 1.2 (editors, the schemas) read differently. Pure.
- `text`: the characters no text may hold (controls, bidi, invisible format characters). Pure.
- `load` (shell): files -> `YamlDoc` (`read_text`, `load_yaml_file`).

May import: the standard library, PyYAML and `ci_tools.errors`; nothing else of ci_tools. Round-trip
edits that keep comments (ruamel.yaml) live with the command that edits (`config/bumpimage.py`).
"""
