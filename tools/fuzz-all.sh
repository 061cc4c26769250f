#!/usr/bin/env bash
# Runs every Fuzz* target of the module, one at a time, each for DURATION
# (arg 1, default 60s; any `go test -fuzztime` value), with -parallel 1.
# Targets are discovered with `go test -list '^Fuzz' ./...`. Exit status 1
# when any target failed (a crasher is then in that package's
# testdata/fuzz/<Target>/), 2 when discovery failed.
#
# Reading the output: "execs: N (0/sec)" for seconds is the engine
# minimising an input that reached new code (about n²/2 runs of the target
# for an n-byte input, so keep seeds small: see maxSeedBytes in
# e2e/report/fuzz_test.go, which is why FuzzDecode once sat at 0/sec). A
# bare "context deadline exceeded" with no failing input is Go's fuzz
# coordinator racing its own -fuzztime deadline (golang/go#75804, go1.26.8
# included; measured here: 3 of 300 runs of a trivial target at 300ms):
# only that exact outcome is run once more, and said so; any failure with
# a failing input, or the race twice, fails.
#
#   bash tools/fuzz-all.sh        # 60s each
#   bash tools/fuzz-all.sh 10s
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
DURATION=${1:-60s}
GO=${GO:-go}

list=$("$GO" test -list '^Fuzz' ./... 2>&1) || { echo "fuzz-all: listing targets failed:" >&2; echo "$list" >&2; exit 2; }
# Output: target names, then "ok  <pkg> <time>" per package.
declare -a targets=()
pending=()
while IFS= read -r line; do
  case "$line" in
    Fuzz*) pending+=("$line") ;;
    ok*|\?*)
      pkg=$(awk '{print $2}' <<<"$line")
      for t in "${pending[@]}"; do targets+=("$pkg $t"); done
      pending=() ;;
  esac
done <<<"$list"

if [ ${#targets[@]} = 0 ]; then echo "fuzz-all: no Fuzz targets found" >&2; exit 2; fi
echo "fuzz-all: ${#targets[@]} targets, $DURATION each"
failed=()
t0=$(date +%s)
for entry in "${targets[@]}"; do
  read -r pkg target <<<"$entry"
  start=$(date +%s)
  printf '== %s %s\n' "$pkg" "$target"
  fuzz() { "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$DURATION" -parallel 1 "$pkg" 2>&1; }
  engine_race() { grep -q 'context deadline exceeded' <<<"$1" && ! grep -q 'Failing input written' <<<"$1"; }
  out=$(fuzz); rc=$?
  if [ $rc != 0 ] && engine_race "$out"; then
    echo "   Go's fuzz coordinator raced its own deadline (golang/go#75804; no failing input written): once more"
    out=$(fuzz); rc=$?
  fi
  if [ $rc = 0 ]; then
    printf '   ok (%ss)\n' $(( $(date +%s) - start ))
  else
    printf '%s\n' "$out" | tail -n 30
    printf '   FAILED (%ss)\n' $(( $(date +%s) - start ))
    failed+=("$pkg $target")
  fi
done
printf 'fuzz-all: %d targets in %ss, %d failed\n' "${#targets[@]}" $(( $(date +%s) - t0 )) "${#failed[@]}"
for f in "${failed[@]}"; do echo "  FAILED: $f"; done
[ ${#failed[@]} = 0 ]
