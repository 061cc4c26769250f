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
  if out=$("$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$DURATION" -parallel 1 "$pkg" 2>&1); then
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
