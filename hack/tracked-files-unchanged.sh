#!/usr/bin/env bash
# Runs the command given, then fails if it changed a file git tracks: a build
# step must leave a checkout as it found it (npm rewriting package-lock.json on
# a fresh clone was one). Edits made before the run are the developer's and are
# compared, not refused: only what changed during the run counts. Outside a git
# checkout (an unpacked tarball) there is nothing to compare with: says so and
# only runs the command.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: hack/tracked-files-unchanged.sh COMMAND [ARG...]" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "hack/tracked-files-unchanged.sh: $ROOT is not a git checkout; not checking that tracked files stay unchanged" >&2
  exec "$@"
fi

# Each tracked file that differs from the index, with the hash of what is on disk now.
changed_files() {
  git -C "$ROOT" ls-files -z --modified --deleted | sort -zu | while IFS= read -r -d '' path; do
    if [ -e "$ROOT/$path" ]; then
      printf '%s %s\n' "$(git -C "$ROOT" hash-object -- "$path")" "$path"
    else
      printf 'deleted %s\n' "$path"
    fi
  done
}

before="$(changed_files)"
"$@"
after="$(changed_files)"
if [ "$before" != "$after" ]; then
  echo "hack/tracked-files-unchanged.sh: '$*' changed tracked files; a build step must not rewrite the checkout:" >&2
  diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | sed -n 's/^[<>] [^ ]* /  /p' | sort -u >&2
  echo "(git diff shows how; commit the change if it is meant, or fix the step that makes it)" >&2
  exit 1
fi
