#!/usr/bin/env bash
# make lab's LAB_K8S=1 phase (lab/job.sh 7a), or alone against a lab whose Kubernetes control plane
# is up (LAB_K8S=1 make lab-up, or bash lab/kube/up.sh):
#   bash lab/kube/job.sh OUT [SSH_RUN_OUT]
#   (KUBE_RUN=DIR: step 1's run is DIR, the run of deploy/job.yaml's pod that make lab's
#   lab/kube/deploy.sh made in-cluster, instead of one from here with a kubeconfig)
#   1. the offload checks and tcp-p1 with lab/harness-kube.yaml: every hypervisor command through
#      the API server (pods/exec) into the OVS pod kwok runs inside the hypervisor; with
#      SSH_RUN_OUT (a perf run over SSH, make lab's $OUT/baseline) their verdicts must be that
#      run's (tools/checkrun same-verdicts), and the results must name transport, pod, container;
#   2. a Role without pods/exec (docs/kubernetes-rbac.yaml's less that rule): tools/kubecheck
#      fails naming the verb, and the smoke suite fails in its preflight, before any VM exists
#      (no provisioning in its timings, no "created" line in its harness.log, no server of its
#      run in Nova);
#   3. a debug pod in a PodSecurity "restricted" namespace: kubecheck's server-side dry run is
#      refused by the API server's admission, and says so;
#   4. a killed run: the offload checks started again, SIGKILLed (the whole ginkgo process group)
#      once its debug pod exists in the API (the admin's view, not the hypervisors'); the sweeper
#      with the run id must find and delete that pod and the run's OpenStack leftovers, and no
#      debug pod may remain;
#   5. an OIDC user with a read-only kubeconfig (issue 36): lab/kube/up.sh's
#      $LAB_STATE/kube/oidc-secret/kubeconfig (auth-provider oidc, the issuer lab/oidc with id-tokens
#      of 20 s), its directory bind-mounted read-only as a Secret's mount is (in a mount namespace
#      of the command's own: read-only for root too). First the negative: client-go with that
#      kubeconfig in place (lab/oidc/plainclient) must fail with "could not persist new tokens: …
#      read-only file system". Then the offload checks and tcp-p1 (step 1's suite, filter and
#      lab/harness-kube.yaml) with that kubeconfig: they must pass, the preflight must have obtained
#      the credentials afresh (its harness.log line), the issuer must have served at least
#      KUBE_OIDC_MIN_REFRESHES (default 4: the preflight's and three renewals of expired id-tokens)
#      refresh grants during the run (its /stats before and after; the count is printed), the
#      kubeconfig must be unchanged and no debug pod left. With KUBE_OIDC_RUN=spdy (make lab) only
#      the negative: lab/kube/spdy.sh makes its run as that user and judges it the same way.
# Step 1 also holds the debug pod: the lab's OVS containers lack tcpdump (lab/kube/up.sh), so the
# run must say so, run tcpdump in a node debug pod per node (tools/checkrun debug-pod: harness.log,
# results.json's host_tools_pod, commands.jsonl) and leave no pod with the harness's debug labels.
# On a lab with LAB_HV_DOMAIN ($LAB_STATE/hv_domain: Nova's hypervisor names are
# computeN.<domain>) step 1 also asserts the node mapping (tools/checkrun node-mapping: every
# hypervisor is such an FQDN, its pod on node computeN, matched by Nova's service host).
# Exit status: non-zero when any of them did not hold. Each step prints "ok:" or "FAILED:".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:/usr/bin:/usr/sbin:/bin:/sbin:$PATH
ROOT=$PWD
OUT=$(realpath -m "${1:?usage: lab/kube/job.sh OUT [SSH_RUN_OUT]}")
SSH_OUT=${2:-}
LAB_STATE=${LAB_STATE:-/var/lib/asap2lab}
KSTATE=$LAB_STATE/kube
export OS_CLIENT_CONFIG_FILE=${OS_CLIENT_CONFIG_FILE:-$LAB_STATE/clouds.yaml}
LAB_DIR=$ROOT/lab
source lab/releases/select.sh   # rx: the release's openstack CLI
HV_DOMAIN=$(cat "$LAB_STATE/hv_domain" 2>/dev/null || true)   # lab/up.sh LAB_HV_DOMAIN
KILL_REACH_S=${KUBE_KILL_REACH_S:-600}   # step 4: start to the debug pod (create, boot, connect)
for f in harness noexec; do
  [ -r "$KSTATE/$f.kubeconfig" ] || { echo "lab/kube/job.sh: $KSTATE/$f.kubeconfig missing: bash lab/kube/up.sh (or LAB_K8S=1 make lab-up)" >&2; exit 2; }
done
mkdir -p "$OUT"
status=0
ok() { echo "ok: $*"; }
failed() { echo "FAILED: $*" >&2; status=1; }
run_dir_of() { find "$1" -mindepth 1 -maxdepth 1 -type d -name '20*' | sort | tail -n 1; }

source lab/kube/runlib.sh   # debug_pods, kube_variant, the OIDC user (step 5; spdy.sh)

# ------------------------------------------------------------------ 1. the checks over Kubernetes
if [ -n "${KUBE_RUN:-}" ]; then
  # make lab ran the same suite, filter and config as deploy/job.yaml's pod, in-cluster
  # (lab/kube/deploy.sh, just before): its run is this step's, not a second one from here.
  echo "== offload checks + tcp-p1 over Kubernetes: the run of deploy/job.yaml's pod (lab/kube/deploy.sh): $KUBE_RUN"
  kube_run=$KUBE_RUN
  if [ -s "$kube_run/results.json" ]; then ok "the perf suite over Kubernetes passed (in the Job's pod)"; else failed "no results.json in $kube_run"; kube_run=; fi
else
echo "== offload checks + tcp-p1 over Kubernetes (lab/harness-kube.yaml)"
mkdir -p "$OUT/kube"
ASAP2E2E_CONFIG=$ROOT/lab/harness-kube.yaml ASAP2E2E_OUTPUT_DIR=$OUT/kube \
  go tool ginkgo ${HARNESS_LDFLAGS:+--ldflags=$HARNESS_LDFLAGS} -v --timeout=30m --junit-report=junit-kube.xml --output-dir="$OUT/kube" \
  --label-filter='offload || tcp-p1' ./suites/perf
rc=$?
kube_run=$(run_dir_of "$OUT/kube")
if [ $rc != 0 ]; then failed "the perf suite over Kubernetes (exit $rc; $OUT/kube)"; else ok "the perf suite over Kubernetes passed"; fi
fi
if [ -z "$kube_run" ]; then
  failed "no run directory in $OUT/kube"
else
  if go run ./tools/checkrun debug-pod "$kube_run"; then
    ok "the OVS containers lacked tcpdump and it ran in a node debug pod per node (harness.log, results.json, commands.jsonl)"
  else
    failed "the run over Kubernetes did not run tcpdump in a node debug pod ($kube_run)"
  fi
  left=$(debug_pods); rc=$?
  if [ $rc != 0 ]; then
    failed "could not list the debug pods (kube_setup.py debug-pods, exit $rc)"
  elif [ -n "$left" ]; then
    failed "debug pods left after the run: $left"
  else
    ok "no pod with the harness's debug labels is left after the run"
  fi
  if [ -n "$HV_DOMAIN" ]; then
    if go run ./tools/checkrun node-mapping "$kube_run" "$HV_DOMAIN"; then
      ok "every hypervisor is an FQDN in $HV_DOMAIN, mapped to its node by Nova's service host"
    else
      failed "the hypervisors are not FQDNs in $HV_DOMAIN mapped by service host ($kube_run)"
    fi
  fi
fi
if [ -n "$SSH_OUT" ]; then
  ssh_run=$(run_dir_of "$SSH_OUT")
  if [ -z "$ssh_run" ] || [ -z "$kube_run" ]; then
    failed "no run directory to compare (ssh '$ssh_run', kubernetes '$kube_run')"
  elif go run ./tools/checkrun same-verdicts "$ssh_run" "$kube_run"; then
    ok "the verdicts over Kubernetes are the SSH run's"
  else
    failed "the verdicts over Kubernetes differ from the SSH run's ($ssh_run vs $kube_run)"
  fi
fi

# ------------------------------------------------------------------ 2. a Role without pods/exec
echo "== preflight: a Role without pods/exec (service account asap2-e2e-noexec)"
cfg=$(kube_variant noexec -e "s#$KSTATE/harness.kubeconfig#$KSTATE/noexec.kubeconfig#")
out=$(go run ./tools/kubecheck "$cfg" 2>&1); rc=$?
echo "$out" | sed 's/^/  kubecheck: /'
if [ $rc = 1 ] && grep -q 'FAIL.*may not create pods/exec' <<<"$out"; then
  ok "kubecheck refused the Role without pods/exec, naming the verb"
else
  failed "kubecheck with the no-exec Role: exit $rc, want 1 and a FAIL naming create pods/exec"
fi
mkdir -p "$OUT/noexec"
ASAP2E2E_CONFIG=$cfg ASAP2E2E_OUTPUT_DIR=$OUT/noexec \
  go tool ginkgo ${HARNESS_LDFLAGS:+--ldflags=$HARNESS_LDFLAGS} --timeout=10m --junit-report=junit-noexec.xml --output-dir="$OUT/noexec" ./suites/smoke >"$OUT/noexec/ginkgo.out" 2>&1
rc=$?
nx_run=$(run_dir_of "$OUT/noexec")
if [ $rc = 0 ]; then
  failed "the smoke suite PASSED with a Role without pods/exec"
elif ! grep -q 'may not create pods/exec' "$OUT/noexec/junit-noexec.xml" 2>/dev/null; then
  failed "the smoke suite failed (exit $rc) but its JUnit does not name create pods/exec ($OUT/noexec)"
elif [ -z "$nx_run" ] || [ ! -f "$nx_run/results.json" ]; then
  failed "the smoke suite's run directory or results.json is missing ($OUT/noexec)"
else
  phases=$(python3 -c 'import json,sys; print(" ".join(t["phase"] for t in (json.load(open(sys.argv[1])).get("timings") or [])))' "$nx_run/results.json")
  id=$(basename "$nx_run")
  servers=$(rx openstack --os-cloud asap2lab-admin server list --all-projects -f value -c Name 2>&1 | grep -F -- "-$id-" || true)
  created=$(grep -E '^[^ ]+ created ' "$nx_run/harness.log" | head -n 3)
  if [[ " $phases " == *" provisioning "* ]] || [ -n "$servers" ] || [ -n "$created" ]; then
    failed "run $id got past the preflight: timings [$phases], servers [$servers], harness.log: $created"
  else
    ok "the run with a Role without pods/exec failed in its preflight, naming the verb; timings [$phases], nothing created (harness.log), no server of run $id in Nova"
  fi
fi

# ------------------------------------------------------------------ 3. PodSecurity restricted
echo "== preflight: the debug pod in a PodSecurity restricted namespace (asap2lab-restricted)"
cfg=$(kube_variant restricted -e 's#^    preset: ovs#    preset: ovs\n    debug_namespace: asap2lab-restricted#')
out=$(go run ./tools/kubecheck "$cfg" 2>&1); rc=$?
echo "$out" | sed 's/^/  kubecheck: /'
if [ $rc = 1 ] && grep -q 'FAIL.*debug pod.*refused.*PodSecurity "restricted' <<<"$out"; then
  ok "the API server's PodSecurity admission refused the debug pod at the dry run, and kubecheck said so"
else
  failed "kubecheck with debug_namespace asap2lab-restricted: exit $rc, want 1 and the debug pod refused by PodSecurity \"restricted\""
fi
# ------------------------------------------------------------------ 4. a killed run, swept
echo "== a run killed once its debug pod exists; the sweeper finds and deletes what it left"
mkdir -p "$OUT/killed"
ASAP2E2E_CONFIG=$ROOT/lab/harness-kube.yaml ASAP2E2E_OUTPUT_DIR=$OUT/killed \
  setsid go tool ginkgo ${HARNESS_LDFLAGS:+--ldflags=$HARNESS_LDFLAGS} -v --timeout=30m --output-dir="$OUT/killed" --label-filter=offload ./suites/perf \
  >"$OUT/killed/ginkgo.out" 2>&1 </dev/null &
kpid=$!
t0=$(date +%s); pods=
while [ $(( $(date +%s) - t0 )) -lt "$KILL_REACH_S" ] && kill -0 "$kpid" 2>/dev/null; do
  k_run=$(run_dir_of "$OUT/killed")
  if [ -n "$k_run" ]; then
    pods=$(debug_pods | grep -F " $(basename "$k_run")" || true)
    [ -n "$pods" ] && break
  fi
  sleep 1
done
if [ -z "$pods" ]; then
  failed "no debug pod of the run appeared within ${KILL_REACH_S}s (or the run ended first: $OUT/killed/ginkgo.out)"
  kill -0 "$kpid" 2>/dev/null && kill -KILL -- "-$kpid"
  wait "$kpid" 2>/dev/null
else
  kid=$(basename "$k_run")
  kill -KILL -- "-$kpid"; wait "$kpid" 2>/dev/null
  echo "  run $kid SIGKILLed $(( $(date +%s) - t0 ))s after its start, its debug pod(s) in the API:"
  echo "$pods" | sed 's/^/    /'
  t1=$(date +%s)
  go run ./tools/sweeper --config "$ROOT/lab/harness-kube.yaml" --run-id "$kid" --delete \
    >"$OUT/killed/sweep.json" 2>"$OUT/killed/sweep.err"; rc=$?
  sed 's/^/  sweeper: /' "$OUT/killed/sweep.err" | head -n 20
  verdict=$(python3 - "$OUT/killed/sweep.json" "$pods" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
want = {line.split()[0] for line in sys.argv[2].splitlines() if line.strip()}
res = rep.get('resources') or []
pods = {r['id'] for r in res if r['kind'] == 'kubernetes pod' and r['action'] == 'deleted'}
other = sorted('%s %s' % (r['kind'], r['name']) for r in res if r['kind'] != 'kubernetes pod' and r['action'] == 'deleted')
problems = []
if want - pods:
    problems.append('debug pod(s) %s not deleted by the sweeper' % sorted(want - pods))
if not other:
    problems.append('no OpenStack leftover of the run deleted')
if rep.get('left'):
    problems.append('%d selected resource(s) left' % rep['left'])
print(('FAILED ' + '; '.join(problems)) if problems else
      'ok deleted debug pod(s) %s and %d OpenStack leftover(s): %s' % (sorted(pods), len(other), ', '.join(other)))
PY
)
  left=$(debug_pods)
  if [ $rc != 0 ] || [ "${verdict%% *}" != ok ]; then
    failed "the sweeper after the killed run $kid (exit $rc): ${verdict#* } ($OUT/killed/sweep.json)"
  elif [ -n "$left" ]; then
    failed "debug pods left after the sweep: $left"
  else
    ok "the sweeper (exit 0, $(( $(date +%s) - t1 ))s) ${verdict#ok }; no debug pod remains"
  fi
fi

# ------------------------------------------------------------------ 5. OIDC, a read-only kubeconfig
# KUBE_OIDC_RUN=spdy (make lab): the negative here, the run as the OIDC user is the SPDY phase's
# (lab/kube/spdy.sh judges it as this step would): one suite run for both claims.
echo "== the OIDC user, its kubeconfig read-only ($OIDC_SECRET)"
if ! oidc_ready; then
  failed "no OIDC kubeconfig or issuer ($OIDC_SECRET/kubeconfig, lab/oidc): bash lab/kube/up.sh"
else
  oidc_negative
  if [ "${KUBE_OIDC_RUN:-}" = spdy ]; then
    echo "  the offload checks and tcp-p1 as the OIDC user: in the SPDY phase's run (lab/kube/spdy.sh)"
  else
    cfg=$(oidc_config)
    mkdir -p "$OUT/oidc"
    oidc_begin; t0=$(date +%s)
    ASAP2E2E_CONFIG=$cfg ASAP2E2E_OUTPUT_DIR=$OUT/oidc read_only "$OIDC_SECRET" \
      go tool ginkgo ${HARNESS_LDFLAGS:+--ldflags=$HARNESS_LDFLAGS} -v --timeout=30m --junit-report=junit-oidc.xml --output-dir="$OUT/oidc" \
      --label-filter='offload || tcp-p1' ./suites/perf >"$OUT/oidc/ginkgo.out" 2>&1
    rc=$?
    if [ $rc != 0 ]; then
      failed "the perf suite as the OIDC user with a read-only kubeconfig (exit $rc; $OUT/oidc/ginkgo.out)"
    else
      oidc_judge "$(run_dir_of "$OUT/oidc")" "$(( $(date +%s) - t0 ))"
    fi
  fi
fi
exit $status
