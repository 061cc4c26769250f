#!/usr/bin/env bash
# make lab's LAB_K8S=1 phase (lab/job.sh 3b), or alone against a lab whose Kubernetes control plane
# is up (LAB_K8S=1 make lab-up, or bash lab/kube/up.sh):
#   bash lab/kube/job.sh OUT [SSH_RUN_OUT]
#   1. the offload checks and tcp-p1 with lab/harness-kube.yaml: every hypervisor command through
#      the API server (pods/exec) into the OVS pod kwok runs inside the hypervisor; with
#      SSH_RUN_OUT (a perf run over SSH, make lab's $OUT/baseline) their verdicts must be that
#      run's (tools/checkrun same-verdicts), and the results must name transport, pod, container;
#   2. a Role without pods/exec (docs/kubernetes-rbac.yaml's less that rule): tools/kubecheck
#      fails naming the verb, and the smoke suite fails in its preflight, before any VM exists
#      (no provisioning in its timings, no "created" line in its harness.log, no server of its
#      run in Nova);
#   3. a debug pod in a PodSecurity "restricted" namespace: kubecheck's server-side dry run is
#      refused by the API server's admission, and says so.
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
for f in harness noexec; do
  [ -r "$KSTATE/$f.kubeconfig" ] || { echo "lab/kube/job.sh: $KSTATE/$f.kubeconfig missing: bash lab/kube/up.sh (or LAB_K8S=1 make lab-up)" >&2; exit 2; }
done
mkdir -p "$OUT"
status=0
ok() { echo "ok: $*"; }
failed() { echo "FAILED: $*" >&2; status=1; }
run_dir_of() { find "$1" -mindepth 1 -maxdepth 1 -type d -name '20*' | sort | tail -n 1; }

# variant NAME SED...: lab/harness-kube.yaml changed by the sed expressions, in $OUT/NAME.yaml
# (output_dir made absolute: the copy is not in lab/).
variant() {
  local name=$1; shift
  sed -e "s#^  output_dir: ../out#  output_dir: $ROOT/out#" "$@" lab/harness-kube.yaml >"$OUT/$name.yaml"
  echo "$OUT/$name.yaml"
}

# ------------------------------------------------------------------ 1. the checks over Kubernetes
echo "== offload checks + tcp-p1 over Kubernetes (lab/harness-kube.yaml)"
mkdir -p "$OUT/kube"
ASAP2E2E_CONFIG=$ROOT/lab/harness-kube.yaml ASAP2E2E_OUTPUT_DIR=$OUT/kube \
  go tool ginkgo -v --timeout=30m --junit-report=junit-kube.xml --output-dir="$OUT/kube" \
  --label-filter='offload || tcp-p1' ./suites/perf
rc=$?
kube_run=$(run_dir_of "$OUT/kube")
if [ $rc != 0 ]; then failed "the perf suite over Kubernetes (exit $rc; $OUT/kube)"; else ok "the perf suite over Kubernetes passed"; fi
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
cfg=$(variant noexec -e "s#$KSTATE/harness.kubeconfig#$KSTATE/noexec.kubeconfig#")
out=$(go run ./tools/kubecheck "$cfg" 2>&1); rc=$?
echo "$out" | sed 's/^/  kubecheck: /'
if [ $rc = 1 ] && grep -q 'FAIL.*may not create pods/exec' <<<"$out"; then
  ok "kubecheck refused the Role without pods/exec, naming the verb"
else
  failed "kubecheck with the no-exec Role: exit $rc, want 1 and a FAIL naming create pods/exec"
fi
mkdir -p "$OUT/noexec"
ASAP2E2E_CONFIG=$cfg ASAP2E2E_OUTPUT_DIR=$OUT/noexec \
  go tool ginkgo --timeout=10m --junit-report=junit-noexec.xml --output-dir="$OUT/noexec" ./suites/smoke >"$OUT/noexec/ginkgo.out" 2>&1
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
cfg=$(variant restricted -e 's#^    preset: ovs#    preset: ovs\n    debug_image: auto\n    debug_namespace: asap2lab-restricted#')
out=$(go run ./tools/kubecheck "$cfg" 2>&1); rc=$?
echo "$out" | sed 's/^/  kubecheck: /'
if [ $rc = 1 ] && grep -q 'FAIL.*debug pod.*refused.*PodSecurity "restricted' <<<"$out"; then
  ok "the API server's PodSecurity admission refused the debug pod at the dry run, and kubecheck said so"
else
  failed "kubecheck with debug_namespace asap2lab-restricted: exit $rc, want 1 and the debug pod refused by PodSecurity \"restricted\""
fi
exit $status
