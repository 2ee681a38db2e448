#!/usr/bin/env bash
# Counts the instructions of the speed benchmark's two runs (seed 000's 10 MB transfer at BER 1.6e-5, with
# Snoop at the base station and without), and of the fixed cost (the same scenario moving 1,000 bytes), as
# whole `lasthop run` processes under valgrind's cachegrind. Unlike a time, the count is the same on every
# run and does not move with other processes' load, so on a shared machine it separates two builds whose
# times do not (README, "Speed"). It does not see every cost: a memset or memcpy is a few instructions however
# many bytes it moves, and a cache miss is one instruction however long it waits.
#
#   scripts/instructions.sh [LASTHOP_BINARY ...]
#
# Without arguments it counts the release build ($CARGO_TARGET_DIR or ./target). With several binaries it
# counts each, so a build before a change can be set against one after it. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 1; }
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  bins=("${CARGO_TARGET_DIR:-target}/release/lasthop")
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-28s %-8s %14s %8s %14s\n' binary run instructions events per_event
for bin in "${bins[@]}"; do
  for run in snoop none fixed; do
    case $run in
      fixed) set_args=(--set nodes.bs.agent=snoop --set flows.bulk.bytes=1000) ;;
      *) set_args=(--set "nodes.bs.agent=$run") ;;
    esac
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null --log-file="$out/log" \
      "$bin" run examples/snoop.toml --out "$out/run" --set links.wavelan.error.ber=1.6e-5 "${set_args[@]}" >/dev/null
    refs=$(sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' "$out/log" | tr -d ,)
    events=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['events'])" "$out/run/metrics.json")
    printf '%-28s %-8s %14s %8s %14s\n' "$(basename "$bin")" "$run" "$refs" "$events" "$((refs / events))"
  done
done
