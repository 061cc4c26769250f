#!/usr/bin/env bash
# The SPDY fallback through a real API server (issue 36 item 6), against a lab whose Kubernetes
# control plane is up (LAB_K8S=1 make lab-up); lab/job.sh runs it in its LAB_K8S=1 phase:
#   bash lab/kube/spdy.sh OUT [SSH_RUN_OUT [WEBSOCKET_RUN]]
# An API server before 1.30 does not take pods/exec over WebSocket (v5.channel.k8s.io): the client
# asks, is refused the upgrade, and speaks SPDY, as on MKE 3 clusters older than Kubernetes 1.30.
# The lab's kube-apiserver 1.37 is restarted with TranslateStreamCloseWebsocketRequests=false, the
# feature gate of exactly that translation (beta and on since 1.30), so it refuses the upgrade as
# those servers do; then:
#   1. the offload checks and tcp-p1 over Kubernetes (lab/harness-kube.yaml) must pass, harness.log
#      must say the upgrade was refused and SPDY used (e2e/remote/kube's protocolExecutor, once),
#      and with SSH_RUN_OUT their verdicts must be the SSH run's (tools/checkrun same-verdicts);
#   2. the exec round trip: the median wall time of the run's hypervisor commands (commands.jsonl),
#      beside WEBSOCKET_RUN's (a run over WebSocket: make lab's Job pod) when given;
#   3. kube-apiserver restarted as lab/kube/up.sh starts it, the gate back on.
# The run is made as the lab's OIDC user with its kubeconfig read-only (lab/kube/runlib.sh), when
# lab/kube/up.sh made one, and judged as lab/kube/job.sh's step 5 judges its own: make lab proves
# both claims with one suite run (job.sh then runs with KUBE_OIDC_RUN=spdy).
# Exit status non-zero when any did not hold; each claim prints "ok:" or "FAILED:".
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$(realpath -m "${1:?usage: lab/kube/spdy.sh OUT [SSH_RUN_OUT [WEBSOCKET_RUN]]}")
SSH_OUT=${2:-} WS_RUN=${3:-}
source lab/lib/common.sh   # LAB_DIR, LAB_STATE, CTL_IP, alive, is_lab_pid; it sets PATH
source lab/kube/lib.sh     # KUBE_*, kube_running
export PATH=/usr/local/go/bin:$PATH   # after common.sh's PATH: go tool ginkgo
export OS_CLIENT_CONFIG_FILE=${OS_CLIENT_CONFIG_FILE:-$LAB_STATE/clouds.yaml}
GATE=TranslateStreamCloseWebsocketRequests
kube_running kube-apiserver || { echo "lab/kube/spdy.sh: kube-apiserver does not run: bash lab/kube/up.sh" >&2; exit 2; }
mkdir -p "$OUT"
status=0
ok() { echo "ok: $*"; }
failed() { echo "FAILED: $*" >&2; status=1; }
run_dir_of() { find "$1" -mindepth 1 -maxdepth 1 -type d -name '20*' | sort | tail -n 1; }
source lab/kube/runlib.sh   # read_only, the OIDC user's config and judgement

# restart_apiserver LOG [FLAGS]: stop kube-apiserver by its pid (TERM, KILL after 5 s) and start it
# again through lab/kube/up.sh with FLAGS added (LAB_KUBE_APISERVER_FLAGS). Not 30 s: on TERM it
# stops listening at once and its controllers within a second, then its HTTP server waits for open
# connections (the kwoks' watches) until its shutdown timeout, --request-timeout's 60 s: measured
# 54.6 s to exit on 2026-12-06, so each restart here waited its whole 30 s and then killed it anyway.
restart_apiserver() {
  local log=$1 flags=${2:-} pid t
  pid=$(cat "$KUBE_PIDS/kube-apiserver.pid")
  is_lab_pid "$pid" || { echo "lab/kube/spdy.sh: pid $pid of $KUBE_PIDS/kube-apiserver.pid is not a lab process" >&2; exit 2; }
  t=$(date +%s)
  kill -TERM "$pid"
  for _ in $(seq 5); do alive "$pid" || break; sleep 1; done
  alive "$pid" && kill -KILL "$pid"
  LAB_KUBE_APISERVER_FLAGS=$flags bash lab/kube/up.sh >"$log" 2>&1 || return 1
  echo "  kube-apiserver restarted${flags:+ with $flags} in $(( $(date +%s) - t ))s"
}
# median_ms RUN: the median wall time of RUN's hypervisor commands through the API server.
median_ms() {
  python3 - "$1/commands.jsonl" <<'PY'
import json, sys
ms = []
for line in open(sys.argv[1]):
    try:
        c = json.loads(line)
    except ValueError:
        continue
    if '(pod ' in c.get('target', '') and c.get('duration_seconds') is not None and not c.get('background'):
        ms.append(c['duration_seconds'] * 1000)
ms.sort()
print('%.0f ms over %d commands' % (ms[len(ms) // 2], len(ms)) if ms else 'no commands')
PY
}

echo "== kube-apiserver with $GATE=false: pods/exec refuses the WebSocket upgrade, as before 1.30"
if ! restart_apiserver "$OUT/up-spdy.out" "--feature-gates=$GATE=false"; then
  failed "kube-apiserver did not come back with the gate off ($OUT/up-spdy.out)"
else
  cfg=$ROOT/lab/harness-kube.yaml as= wrap=()
  if oidc_ready && oidc_begin; then
    cfg=$(oidc_config) as=" as the OIDC user, its kubeconfig read-only" wrap=(read_only "$OIDC_SECRET")
  fi
  echo "  the offload checks and tcp-p1$as"
  t0=$(date +%s)
  ASAP2E2E_CONFIG=$cfg ASAP2E2E_OUTPUT_DIR=$OUT "${wrap[@]}" \
    go tool ginkgo ${HARNESS_LDFLAGS:+--ldflags=$HARNESS_LDFLAGS} -v --timeout=30m --junit-report=junit-spdy.xml --output-dir="$OUT" \
    --label-filter='offload || tcp-p1' ./suites/perf >"$OUT/ginkgo.out" 2>&1
  rc=$?
  secs=$(( $(date +%s) - t0 ))
  run=$(run_dir_of "$OUT")
  if [ $rc = 0 ]; then ok "the offload checks and tcp-p1 over SPDY$as passed"; else failed "the perf suite over SPDY$as (exit $rc; $OUT/ginkgo.out)"; fi
  [ $rc = 0 ] && [ -n "$as" ] && oidc_judge "$run" "$secs"
  if [ -n "$run" ] && grep -q 'refused the WebSocket upgrade.*use SPDY from here on' "$run/harness.log"; then
    ok "harness.log: $(grep -o 'pods/exec: the API server refused the WebSocket upgrade.*' "$run/harness.log" | head -n 1 | cut -c1-220)"
  else
    failed "harness.log does not say the upgrade was refused and SPDY used (${run:-no run directory})"
  fi
  if [ -n "$SSH_OUT" ] && [ -n "$run" ]; then
    ssh_run=$(run_dir_of "$SSH_OUT")
    if go run ./tools/checkrun same-verdicts "$ssh_run" "$run"; then
      ok "the verdicts over SPDY are the SSH run's"
    else
      failed "the verdicts over SPDY differ from the SSH run's ($ssh_run vs $run)"
    fi
  fi
  if [ -n "$run" ]; then
    echo "  exec round trip, median: SPDY $(median_ms "$run")${WS_RUN:+; WebSocket (v5) $(median_ms "$WS_RUN")}"
  fi
fi
echo "== kube-apiserver as lab/kube/up.sh starts it"
restart_apiserver "$OUT/up-default.out" && ok "kube-apiserver runs again with its defaults" ||
  failed "kube-apiserver did not come back with its defaults ($OUT/up-default.out)"
exit $status
