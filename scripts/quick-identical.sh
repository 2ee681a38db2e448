#!/usr/bin/env bash
# Guards the simulator's results against unintended change: every `results.csv` of the quick reproduction
# (`lasthop reproduce --quick`) must have the SHA-256 recorded in tests/quick-results.sha256. A speed-up of
# the simulator must leave every result byte-identical; a change that is meant to change results rewrites
# the record with --update and says why in its commit.
#
#   scripts/quick-identical.sh [--update] [OUT_DIR]
#
# OUT_DIR is the output of a quick reproduction already made (CI passes the directory of its
# `reproduce --quick --check` run, so the quick runs are not made twice); without it the quick reproduction
# is run into a temporary directory with the release build of `lasthop` ($CARGO_TARGET_DIR or ./target).
#
# The record lists every experiment of the quick set. When experiments are added, removed or changed on
# purpose (for instance when branches that add experiments are merged), regenerate it on the merged tree:
#   cargo build --release -p lasthop && scripts/quick-identical.sh --update
# and review the diff of tests/quick-results.sha256: only the experiments meant to change may change.
# A change meant to alter only some columns (fewer events played alters `events`) is proven so before the
# update with scripts/results-diff.py BEFORE_OUT AFTER_OUT --ignore COLUMN (every other field identical).
set -euo pipefail
cd "$(dirname "$0")/.."
record=tests/quick-results.sha256

update=0
if [ "${1:-}" = "--update" ]; then
  update=1
  shift
fi
out="${1:-}"
if [ -z "$out" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  bin="${CARGO_TARGET_DIR:-$PWD/target}/release/lasthop"
  [ -x "$bin" ] || { echo "quick-identical: no $bin (cargo build --release -p lasthop)" >&2; exit 2; }
  "$bin" reproduce --quick --out "$out" >/dev/null
fi

# One line per experiment: "<sha256>  <experiment>/results.csv", sorted by experiment.
sums() {
  (cd "$out" && find . -mindepth 2 -maxdepth 2 -name results.csv | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum)
}

if [ "$update" = 1 ]; then
  sums >"$record"
  echo "quick-identical: wrote $record ($(wc -l <"$record") experiments)"
  exit 0
fi

[ -f "$record" ] || { echo "quick-identical: no $record (run with --update on a trusted tree)" >&2; exit 2; }
if diff -u "$record" <(sums); then
  echo "quick-identical: all $(wc -l <"$record") quick results.csv files are byte-identical to $record"
else
  echo "quick-identical: results differ from $record (lines with - are recorded, + are this build's);" >&2
  echo "  if the change is intended, rerun with --update and say why in the commit" >&2
  exit 1
fi
