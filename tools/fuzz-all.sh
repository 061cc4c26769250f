#!/usr/bin/env bash
# Runs every Fuzz* target of the module, one at a time, each for DURATION
# (arg 1, default 60s; any `go test -fuzztime` value), with -parallel 1.
# Targets are discovered with `go test -list '^Fuzz' ./...`. Exit status 1
# when any target failed (a crasher is then in that package's
# testdata/fuzz/<Target>/), 2 when discovery failed.
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
  # The Go fuzzing engine itself sometimes fails a target with a bare
  # "context deadline exceeded" when -fuzztime runs out while a worker is
  # minimising a new input: no crasher is written then. Such a run is tried
  # once more; a real crash always writes its failing input and fails.
  engine_deadline() { grep -q 'context deadline exceeded' <<<"$1" && ! grep -q 'Failing input written' <<<"$1"; }
  out=$(fuzz); rc=$?
  if [ $rc != 0 ] && engine_deadline "$out"; then
    echo "   the fuzzing engine hit its own deadline (no crasher written); trying once more"
    out=$(fuzz); rc=$?
  fi
  if [ $rc = 0 ]; then
    printf '   ok (%ss)\n' $(( $(date +%s) - start ))
  elif engine_deadline "$out"; then
    printf '   ok, but the engine hit its deadline twice without a crasher (%ss)\n' $(( $(date +%s) - start ))
  else
    printf '%s\n' "$out" | tail -n 30
    printf '   FAILED (%ss)\n' $(( $(date +%s) - start ))
    failed+=("$pkg $target")
  fi
done
printf 'fuzz-all: %d targets in %ss, %d failed\n' "${#targets[@]}" $(( $(date +%s) - t0 )) "${#failed[@]}"
for f in "${failed[@]}"; do echo "  FAILED: $f"; done
[ ${#failed[@]} = 0 ]
