#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Fails when a C or C++ file changed since the commit in .ci/format-base
# (from which the tree is kept clang-formatted) differs from what
# clang-format-22 makes of it (.clang-format). Files older than that are
# formatted when next touched. With --fix, rewrites them instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
format="${CLANG_FORMAT:-clang-format-22}"
base="$(cat .ci/format-base)"
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  # A shallow clone lacks the history to diff against.
  echo "format-check: WARNING: $base is not in this clone (shallow?); nothing checked" >&2
  exit 0
fi
if ! command -v "$format" >/dev/null; then
  echo "format-check.sh: $format is missing: run scripts/setup.sh first" >&2
  exit 2
fi
# Changed since the base, and new files not yet added (which a commit
# would otherwise take unformatted).
sources=('include/*.h' 'lib/*.h' 'lib/*.cpp' 'lib/*.c' 'tools/*.cpp' 'tools/*.c'
  'test/*.cpp' 'test/*.c' 'test/*.h')
mapfile -t files < <({
  git diff --name-only --diff-filter=AMR "$base" -- "${sources[@]}"
  git ls-files --others --exclude-standard -- "${sources[@]}"
} | sort -u)
if [ "${1:-}" = "--fix" ]; then
  ((${#files[@]})) && "$format" -i "${files[@]}"
  exit 0
fi
status=0
for f in "${files[@]}"; do
  if ! "$format" --dry-run --Werror "$f" 2>/dev/null; then
    echo "not clang-formatted: $f (scripts/format-check.sh --fix)"
    status=1
  fi
done
echo "format-check: ${#files[@]} changed C/C++ files checked"
exit $status
