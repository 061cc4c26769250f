#!/usr/bin/env bash
# Two fault rows for the Kubernetes path (issue 26), against a lab whose Kubernetes control plane is
# up (LAB_K8S=1 make lab-up, or bash lab/kube/up.sh); lab/job.sh runs it in its LAB_K8S=1 phase:
#   sudo bash lab/kube/faults.sh OUT
#   1. apiserver: the offload checks over Kubernetes (lab/harness-kube.yaml, --label-filter offload);
#      once a hypervisor command went through the API server into an OVS pod (the first `tc` of the
#      checks in commands.jsonl), kube-apiserver is stopped by its pid ($KUBE_PIDS/kube-apiserver.pid,
#      TERM, KILL after KUBE_FAULT_STOP_S). A message naming the API server
#      (https://$CTL_IP:$KUBE_API_PORT) must reach its harness.log or commands.jsonl within the
#      command bound (intervals.command, KUBE_FAULT_BOUND_S) plus the kill grace and some slack,
#      and results.json must record it; the exit status is printed, not asserted (see below).
#      Then the API server is started again as lab/kube/up.sh starts it (up.sh itself: it keeps what
#      runs, starts what does not, waits for /readyz and for every node and pod to be ready).
#   2. ovs-pod: the same checks; at the same moment the OVS pod of compute1 (preset ovs's labels) is
#      deleted (kube_setup.py delete-pod) and created again with the same labels under a new name, as
#      the DaemonSet would (kube_setup.py objects creates what is missing). The run's harness.log or
#      commands.jsonl must name the pod that vanished ("pod openstack/OLD on node compute1 vanished")
#      and its replacement ("replaced by pod openstack/NEW"), and results.json the vanished pod
#      and the move (environment.hypervisors[].pod_replacements: OLD → NEW on the node).
# Exit status: non-zero when either did not hold. Each row prints "ok:" or "FAILED:".
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$(realpath -m "${1:?usage: lab/kube/faults.sh OUT}")
source lab/lib/common.sh   # LAB_DIR, LAB_STATE, CTL_IP, HVS, hv_host, alive, is_lab_pid; it sets PATH
source lab/kube/lib.sh     # KUBE_*, kube_running, kube_py
export PATH=/usr/local/go/bin:$PATH   # after common.sh's PATH: go tool ginkgo
export OS_CLIENT_CONFIG_FILE=${OS_CLIENT_CONFIG_FILE:-$LAB_STATE/clouds.yaml}
BOUND_S=${KUBE_FAULT_BOUND_S:-120}   # intervals.command: lab/harness-kube.yaml sets none, so the default 2m
GRACE_S=5                           # remote.DefaultKillGrace
SLACK_S=${KUBE_FAULT_SLACK_S:-20}    # a loaded 2-core machine: the log line after the failed command
REACH_S=${KUBE_FAULT_REACH_S:-900}   # create, boot, connect: until the checks' first command
STOP_S=${KUBE_FAULT_STOP_S:-30}      # kube-apiserver's own shutdown before KILL
END_S=${KUBE_FAULT_END_S:-1200}      # the run's end (teardown included) after the fault
SERVER="https://$CTL_IP:$KUBE_API_PORT"
[ -r "$KUBE_STATE/harness.kubeconfig" ] || { echo "lab/kube/faults.sh: $KUBE_STATE/harness.kubeconfig missing: bash lab/kube/up.sh (or LAB_K8S=1 make lab-up)" >&2; exit 2; }
kube_running kube-apiserver || { echo "lab/kube/faults.sh: kube-apiserver does not run ($KUBE_PIDS/kube-apiserver.pid): bash lab/kube/up.sh" >&2; exit 2; }
mkdir -p "$OUT"
status=0
ok() { echo "ok: $*"; }
failed() { echo "FAILED: $*" >&2; status=1; }
run_dir_of() { find "$1" -mindepth 1 -maxdepth 1 -type d -name '20*' | sort | tail -n 1; }
hosts() { local h= n; for n in $HVS; do h+="${h:+,}$(hv_host "$n")=$(hv_ctlip "$n")"; done; echo "$h"; }

# start_run ROW: the offload checks over Kubernetes in the background, output in $OUT/ROW; sets PID.
start_run() {
  mkdir -p "$OUT/$1"
  ASAP2E2E_CONFIG=$ROOT/lab/harness-kube.yaml ASAP2E2E_OUTPUT_DIR=$OUT/$1 \
    setsid go tool ginkgo ${HARNESS_LDFLAGS:+--ldflags=$HARNESS_LDFLAGS} -v --timeout=40m --junit-report="junit-$1.xml" --output-dir="$OUT/$1" \
    --label-filter='offload' ./suites/perf >"$OUT/$1/ginkgo.out" 2>&1 </dev/null &
  PID=$!
}

# wait_checks ROW: until a hypervisor command of the checks went through the API server into an
# OVS pod (a `tc -s` / `tc qdisc` of the checks, not the environment's `tc -V`, whose target names a
# pod in commands.jsonl); 1 when the run ended first
# or REACH_S passed.
wait_checks() {
  local deadline=$(( $(date +%s) + REACH_S )) dir
  while [ "$(date +%s)" -lt "$deadline" ]; do
    dir=$(run_dir_of "$OUT/$1")
    if [ -n "$dir" ] && grep -qE '"target":"hypervisor [^"]*\(pod [^"]*","cmd":"tc (-s|qdisc) ' "$dir/commands.jsonl" 2>/dev/null; then
      RUN=$dir
      return 0
    fi
    kill -0 "$PID" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}

# wait_end: until the run started by start_run ends (END_S at most, then TERM to its group); sets RC.
wait_end() {
  local deadline=$(( $(date +%s) + END_S ))
  while kill -0 "$PID" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 2; done
  if kill -0 "$PID" 2>/dev/null; then
    echo "  the run still ran ${END_S}s after the fault: TERM to its process group $PID" >&2
    kill -TERM -- "-$PID" 2>/dev/null
  fi
  wait "$PID"; RC=$?
}

# seen_after STRING: the seconds from T_FAULT until STRING (fixed) shows in the run's harness.log or
# commands.jsonl, polled every second while the run lasts; "" when never.
seen_after() {
  local what=$1 deadline=$(( $(date +%s) + END_S ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if grep -qF -- "$what" "$RUN/harness.log" "$RUN/commands.jsonl" 2>/dev/null; then
      echo $(( $(date +%s) - T_FAULT )); return
    fi
    kill -0 "$PID" 2>/dev/null || break
    sleep 1
  done
  grep -qF -- "$what" "$RUN/harness.log" "$RUN/commands.jsonl" 2>/dev/null && echo $(( $(date +%s) - T_FAULT ))
}

# ------------------------------------------------------------------ 1. the API server stopped
echo "== apiserver: kube-apiserver stopped under the offload checks over Kubernetes"
start_run apiserver
if ! wait_checks apiserver; then
  failed "the checks never sent a command through the API server within ${REACH_S}s ($OUT/apiserver)"
  kill -0 "$PID" 2>/dev/null && kill -TERM -- "-$PID"; wait "$PID"
else
  apid=$(cat "$KUBE_PIDS/kube-apiserver.pid")
  is_lab_pid "$apid" || { echo "lab/kube/faults.sh: pid $apid of $KUBE_PIDS/kube-apiserver.pid is not a lab process" >&2; exit 2; }
  T_FAULT=$(date +%s)
  kill -TERM "$apid"
  for _ in $(seq "$STOP_S"); do alive "$apid" || break; sleep 1; done
  alive "$apid" && kill -KILL "$apid"
  echo "  kube-apiserver (pid $apid) stopped at +0s; run $RUN"
  took=$(seen_after "API server $SERVER")
  wait_end
  limit=$(( BOUND_S + GRACE_S + SLACK_S ))
  # The exit status alone is not the assertion: with run.expected_path baseline (the lab's) a check
  # that ended before the stop can still show the software path, which ExpectPath accepts beside
  # inconclusive ones. What must hold: the commands after the stop failed, at their bound at the
  # latest, naming the API server, and the results say so (a check's reason or the run's errors).
  if [ -z "$took" ]; then
    failed "the run (exit $RC) never named the API server $SERVER in harness.log or commands.jsonl ($RUN)"
  elif [ "$took" -gt "$limit" ]; then
    failed "the first message naming the API server came ${took}s after the stop; the bound is ${BOUND_S}s (+${GRACE_S}s grace, ${SLACK_S}s slack)"
  elif ! grep -qF -- "API server $SERVER" "$RUN/results.json" 2>/dev/null; then
    failed "the commands named the API server ${took}s after the stop, but results.json does not ($RUN)"
  else
    ok "a failed command named the API server $SERVER ${took}s after the stop (bound ${BOUND_S}s), and results.json records it; the run exited $RC"
    grep -hF -- "API server $SERVER" "$RUN/harness.log" | head -n 3 | cut -c1-400 | sed 's/^/  /'
  fi
fi
echo "  starting kube-apiserver again (lab/kube/up.sh)"
bash lab/kube/up.sh >"$OUT/apiserver/up.out" 2>&1 || failed "lab/kube/up.sh after the stop failed ($OUT/apiserver/up.out)"
# The run's teardown could not delete its node debug pods while the API server was down (the
# OVS containers lack tcpdump: lab/kube/up.sh): delete what it left, so the next row and job
# start from none.
left=$(kube_py debug-pods --delete 2>/dev/null) || failed "deleting the debug pods left by the apiserver row failed"
[ -z "$left" ] || echo "$left" | sed 's/^/  left by the apiserver row: /'

# ------------------------------------------------------------------ 2. the OVS pod replaced
echo "== ovs-pod: the OVS pod of compute1 deleted and created again under the offload checks"
sel='application%3Dopenvswitch%2Ccomponent%3Dopenvswitch-vswitchd'
node=$(hv_host 1)
ovs_pod() { # the name of node's OVS pod that is not being deleted
  curl -fsS -m 10 --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $(cat "$KUBE_ETC/admin.token")" \
    "$SERVER/api/v1/namespaces/openstack/pods?labelSelector=$sel&fieldSelector=spec.nodeName%3D$node" |
    python3 -c 'import json,sys; print(" ".join(p["metadata"]["name"] for p in json.load(sys.stdin)["items"] if not p["metadata"].get("deletionTimestamp")))'
}
old=$(ovs_pod)
if [ -z "$old" ] || [ "$old" != "${old%% *}" ]; then
  failed "node $node has no single OVS pod before the row: '$old'"
else
  start_run ovs-pod
  if ! wait_checks ovs-pod; then
    failed "the checks never sent a command through the API server within ${REACH_S}s ($OUT/ovs-pod)"
    kill -0 "$PID" 2>/dev/null && kill -TERM -- "-$PID"; wait "$PID"
  else
    T_FAULT=$(date +%s)
    kube_py delete-pod openstack "$old" && kube_py objects "$(hosts)" && kube_py wait "$(hosts)" 60
    new=$(ovs_pod)
    echo "  pod openstack/$old on $node replaced by openstack/$new at +$(( $(date +%s) - T_FAULT ))s; run $RUN"
    took=$(seen_after "pod openstack/$old on node $node vanished")
    wait_end
    if [ -z "$new" ] || [ "$new" = "$old" ]; then
      failed "no new OVS pod on $node after the delete ('$new')"
    elif [ -z "$took" ]; then
      failed "the run (exit $RC) never named the vanished pod openstack/$old on node $node ($RUN): did a command reach compute1 after the delete?"
    elif ! grep -qF -- "replaced by pod openstack/$new" "$RUN/harness.log" "$RUN/commands.jsonl"; then
      failed "the run named the vanished pod but not its replacement openstack/$new ($RUN)"
    elif ! grep -qF -- "pod openstack/$old on node $node vanished" "$RUN/results.json" 2>/dev/null; then
      failed "harness.log names the vanished pod, but no check's reason nor error in results.json does ($RUN)"
    elif ! python3 - "$RUN/results.json" "$node" "openstack/$old" "openstack/$new" <<'PY'
import json, sys
path, node, old, new = sys.argv[1:]
hvs = json.load(open(path))["environment"].get("hypervisors") or []
moves = [m for h in hvs for m in h.get("pod_replacements") or []]
sys.exit(0 if any(m["from"] == old and m["to"] == new and m["node"] == node for m in moves) else 1)
PY
    then
      failed "results.json does not record the move from openstack/$old to openstack/$new on $node (environment.hypervisors[].pod_replacements) ($RUN)"
    else
      ok "the run (exit $RC) named the vanished pod openstack/$old on $node ${took}s after the delete, and its replacement openstack/$new"
      grep -hF "was replaced by pod openstack/$new" "$RUN/harness.log" | head -n 1 | cut -c1-400 | sed 's/^/  /'
    fi
  fi
fi
exit $status
