#!/usr/bin/env bash
# Counts the instructions of the speed benchmark's runs (Balakrishnan 1995's 10 MB transfer at BER 1.6e-5, with
# Snoop at the base station and without), of the congestion controls' runs (the plain 10 MB transfer at the
# example's BER 3.9e-6, where every sender completes it, with Reno, CUBIC and BBR, which paces), and of the
# fixed cost (the same scenario moving 1,000 bytes), as
# whole `lasthop run` processes under valgrind's cachegrind. Unlike a time, the count is the same on every run
# and does not move with other processes' load, so on a shared machine it separates two builds whose times do
# not (docs/src/dev/performance.md). It does not see every cost: a memset or memcpy is a few instructions
# however many bytes it moves, and a cache miss is one instruction however long it waits.
#
#   scripts/instructions.sh [LASTHOP_BINARY ...]
#   scripts/instructions.sh --calls AGENT [LASTHOP_BINARY]
#
# Without binaries it counts the release build ($CARGO_TARGET_DIR or ./target). With several it counts each,
# so a build before a change can be set against one after it. `--calls RUN` (`snoop`, `none`, `reno`, `cubic` or `bbr`) counts one
# 10 MB run under callgrind instead and prints each step of a packet's way with everything it calls, its calls
# and the instructions per call, then the event loop split into the protocols' own work and the simulator's
# carrying of packets between them (scripts/per_call.py). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 1; }
calls=
if [ "${1:-}" = --calls ]; then
  calls=${2:?"--calls needs a run: snoop, none, reno, cubic or bbr"}
  shift 2
fi
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  bins=("${CARGO_TARGET_DIR:-target}/release/lasthop")
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The arguments of one of the benchmark's runs: `snoop`, `none` (plain Reno), `reno`, `cubic` and `bbr` (plain,
# at BER 3.9e-6) or `fixed` (1,000 bytes).
run_args() {
  local agent=$1 ber=1.6e-5 extra=()
  case $agent in
    fixed) agent=snoop extra=(--set flows.bulk.bytes=1000) ;;
    reno | cubic | bbr) extra=(--set "tcp.variant=$agent") agent=none ber=3.9e-6 ;;
  esac
  echo run examples/snoop.toml --out "$out/run" --set "links.wavelan.error.ber=$ber" --set "nodes.bs.agent=$agent" "${extra[@]}"
}

if [ -n "$calls" ]; then
  # shellcheck disable=SC2046 # run_args's words carry no spaces
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" --log-file="$out/log" "${bins[0]}" $(run_args "$calls") >/dev/null
  callgrind_annotate --inclusive=yes --tree=caller --threshold=100 --auto=no "$out/cg" >"$out/tree" 2>"$out/annotate-log"
  python3 scripts/per_call.py "$out/tree" "$out/run/metrics.json"
  exit
fi

printf '%-28s %-8s %14s %8s %14s\n' binary run instructions events per_event
for bin in "${bins[@]}"; do
  for run in snoop none reno cubic bbr fixed; do
    # shellcheck disable=SC2046 # run_args's words carry no spaces
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null --log-file="$out/log" "$bin" $(run_args "$run") >/dev/null
    refs=$(sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' "$out/log" | tr -d ,)
    events=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['events'])" "$out/run/metrics.json")
    printf '%-28s %-8s %14s %8s %14s\n' "$(basename "$bin")" "$run" "$refs" "$events" "$((refs / events))"
  done
done
