#!/usr/bin/env bash
# Runs every Fuzz* target of the module, one at a time, each for BUDGET
# (arg 1, any `go test -fuzztime` value; default 300000x: that many calls
# of the target), with -parallel 1. Targets are found in the test files
# go list names (below). Exit status 1 when any target failed (a
# crasher is then in that package's testdata/fuzz/<Target>/), 2 when
# discovery failed.
#
# Why a count and not a duration: with a duration, Go's fuzz coordinator
# races its own deadline (golang/go#75804, go1.26 included; internal/fuzz
# compares the deadline's error with that of the workers' context before
# that child context is cancelled) and fails a healthy target with a bare
# "context deadline exceeded" about once in a hundred runs; measured here:
# 3 of 300 runs of a trivial target at 300ms. With a count there is no
# deadline, so no race, and nothing here is retried. A duration is still
# accepted (a person at a terminal may want one); that failure is then
# named for what it is, never retried.
#
# Reading the output: "execs: N (0/sec)" for seconds is the engine
# minimising an input that reached new code (about n²/2 runs of the target
# for an n-byte input, so keep seeds small: see maxSeedBytes in
# e2e/report/fuzz_test.go, which is why FuzzDecode once sat at 0/sec).
#
# More rounds on idle cycles (CI): with FUZZ_MORE_UNTIL=FILE, once every target
# has had its BUDGET (the pass every run owes), the targets run again, round
# after round, each for BUDGET more calls from the corpus the earlier rounds
# grew (Go keeps it in $GOCACHE/fuzz), until FILE exists: it is looked for
# before each target, and the target running then ends at its count, so no
# deadline is raced. FUZZ_MORE_AFTER="FILE..." holds the extra rounds back
# until each of those files exists (CI: the status files of the background
# jobs that share fuzzing's priority, so that extra fuzzing never delays them).
# A failure in any round fails the run, as in the first.
#
#   bash tools/fuzz-all.sh             # 300000 calls each
#   bash tools/fuzz-all.sh 10000x      # what CI runs first; then more while its lab jobs run
#   bash tools/fuzz-all.sh 30s
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUDGET=${1:-300000x}
GO=${GO:-go}

# Targets: every func FuzzXxx(f *testing.F) in the test files that go list says this build
# compiles (build constraints applied), in their packages' and files' order, found without
# compiling anything. `go test -list '^Fuzz' ./...` compiled every package's tests first: from an
# empty build cache that was most of this script's first 9 minutes, and beside make test (CI runs
# both at once from nothing) the same test binaries were compiled twice.
list=$("$GO" list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$.Dir}}/{{.}}{{end}}' ./... 2>&1) ||
  { echo "fuzz-all: listing packages failed:" >&2; echo "$list" >&2; exit 2; }
declare -a targets=()
while read -r pkg files; do
  [ -n "$files" ] || continue
  # go test's rule: "Fuzz", then nothing or a character that is not a lower-case letter.
  # shellcheck disable=SC2086 # files: paths without spaces (go list's, in this module)
  for t in $(sed -n 's/^func \(Fuzz\([A-Z0-9_][A-Za-z0-9_]*\)\{0,1\}\)([A-Za-z0-9_]* \*testing\.F) *{.*$/\1/p' $files); do
    targets+=("$pkg $t")
  done
done <<<"$list"

if [ ${#targets[@]} = 0 ]; then echo "fuzz-all: no Fuzz targets found" >&2; exit 2; fi
echo "fuzz-all: ${#targets[@]} targets, -fuzztime $BUDGET each"
failed=()
t0=$(date +%s)
# fuzz_one PKG TARGET [ROUND]: one target for BUDGET; a failure is recorded in failed.
fuzz_one() {
  local pkg=$1 target=$2 round=${3:-} start out rc
  start=$(date +%s)
  printf '== %s %s%s\n' "$pkg" "$target" "${round:+ (round $round)}"
  out=$("$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$BUDGET" -parallel 1 "$pkg" 2>&1); rc=$?
  if [ $rc = 0 ]; then
    printf '   ok (%ss)\n' $(( $(date +%s) - start ))
  else
    printf '%s\n' "$out" | tail -n 30
    if [[ $BUDGET != *x ]] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
      echo "   no input failed: this is Go's fuzz coordinator racing its -fuzztime deadline (golang/go#75804); a count (e.g. 300000x) has no deadline"
    fi
    printf '   FAILED (%ss)\n' $(( $(date +%s) - start ))
    failed+=("$pkg $target${round:+ (round $round)}")
  fi
}
for entry in "${targets[@]}"; do
  read -r pkg target <<<"$entry"
  fuzz_one "$pkg" "$target"
done
printf 'fuzz-all: %d targets in %ss, %d failed\n' "${#targets[@]}" $(( $(date +%s) - t0 )) "${#failed[@]}"
# after_ready: every FUZZ_MORE_AFTER file exists.
after_ready() { local f; for f in ${FUZZ_MORE_AFTER:-}; do [ -e "$f" ] || return 1; done; }
if [ -n "${FUZZ_MORE_UNTIL:-}" ]; then
  more=0 t1=$(date +%s) round=1
  while [ ! -e "$FUZZ_MORE_UNTIL" ] && ! after_ready; do sleep 5; done
  while [ ! -e "$FUZZ_MORE_UNTIL" ]; do
    round=$(( round + 1 ))
    for entry in "${targets[@]}"; do
      [ -e "$FUZZ_MORE_UNTIL" ] && break
      read -r pkg target <<<"$entry"
      fuzz_one "$pkg" "$target" "$round"
      more=$(( more + 1 ))
    done
  done
  printf 'fuzz-all: %d more target runs (%s calls each, up to round %d) in %ss, until %s appeared\n' \
    "$more" "$BUDGET" "$round" $(( $(date +%s) - t1 )) "$FUZZ_MORE_UNTIL"
  [ ${#failed[@]} = 0 ] || printf 'fuzz-all: %d failed in all\n' "${#failed[@]}"
fi
for f in "${failed[@]}"; do echo "  FAILED: $f"; done
[ ${#failed[@]} = 0 ]
