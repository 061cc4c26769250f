#!/usr/bin/env bash
# The fault matrix of issue 4 against the local lab (must be up: bash lab/up.sh).
#
#   bash suites/faults/run.sh [OUT_DIR] [go test -run pattern]
#
# Every row runs the compiled smoke/perf suite as a subprocess, hurts it at
# one phase and checks, with the openstack CLI, that nothing of its run id is
# left. Writes OUT_DIR/matrix.md and matrix.json (the
# table: fault, phase, outcome, leftovers) and every row's files under
# OUT_DIR/rows/. Exit status non-zero when a row failed.
# Rows run side by side in two kinds of slot (lab/faultlab/slots.go; each row names its load):
#   TRAFFIC_ROWS=2  traffic rows at once (a harness through full-rate TCP or the checks' sustained
#                   flow; concurrent/two-runs, whose second run is its fault, takes one). Not 4: on
#                   this 2-core lab four at once stalled a healthy stream for 5 s
#                   (traffic.stall_timeout) in 2 of 21 rows of a CI run on 2026-12-03
#                   (concurrent/two-runs, and datapath/network-cut before its fault).
#   LIGHT_ROWS=2    rows that end before any traffic window (API faults, signals before the data
#                   path, guests that never answer, teardown faults), beside them: they wait on
#                   timeouts and API answers, and no longer queue behind the traffic rows.
#   e.g. bash suites/faults/run.sh out/faults 'TestFaults/signal'
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
export PATH=/usr/local/go/bin:/usr/bin:/usr/sbin:/bin:/sbin:$PATH
source lab/lib/buildinfo.sh
harness_ldflags "$PWD"   # the rows' suites record this checkout's commit (GOFLAGS for their go test -c)
OUT=${1:-$PWD/out/faults}
RUN=${2:-TestFaults}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
start=$(date +%s)
# -parallel only lets every row wait for its own kind of slot: the slots bound what runs.
ASAP2E2E_FAULTS=lab ASAP2E2E_FAULTS_OUT=$OUT \
  ASAP2E2E_FAULTS_TRAFFIC_ROWS=${TRAFFIC_ROWS:-2} ASAP2E2E_FAULTS_LIGHT_ROWS=${LIGHT_ROWS:-2} \
  go test -count=1 -v -timeout 40m -parallel 64 -run "$RUN" ./suites/faults 2>&1 |
  (trap '' INT TERM; exec tee "$OUT/go-test.log") # tee outlives a Ctrl-C: the matrix's stop and the harness's teardown stay logged
rc=${PIPESTATUS[0]}
echo "fault matrix: exit $rc in $(( $(date +%s) - start ))s; table: $OUT/matrix.md"
# make lab's summary names the failed rows and what they said (lab/job.sh's PHASE_WHY).
if [ "$rc" != 0 ] && [ -n "${PHASE_WHY:-}" ]; then python3 lab/lib/phase_why.py faults "$OUT" >>"$PHASE_WHY"; fi
exit "$rc"
