"""The changelog gate: `inferencex-e2e/perf-changelog.yaml` is append-only and byte-exact.

`parse` (byte rules, entries), `keys` (config-key patterns), `schema` (entry and pr-link rules), `lint`
(one change judged as a whole), `coverage` (the missing-entry rule), `merge` (canonical links,
conflict resolution) are pure: bytes and plain data in, findings out. `shell` reads both versions
from git or the index and `flow` runs `changelog lint` (and writes what `--fix` repaired): the only
modules here that do I/O.

May import: `ci_tools.errors`, `ci_tools.names`, the YAML readers; `shell.py` and `flow.py` also
`ci_tools.gitio`.
"""
