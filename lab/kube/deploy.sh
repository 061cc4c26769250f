#!/usr/bin/env bash
# make lab's LAB_K8S=1 phase "the image as the Job's pod" (lab/job.sh 7b), or alone against a lab whose
# Kubernetes control plane is up (LAB_K8S=1 make lab-up):
#   bash lab/kube/deploy.sh OUT
#   1. the artifact: make image (dist/ and its OCI image, docs/DEPLOY.md) into OUT, loaded into podman
#      (Debian's, with runc: this kernel's cgroups are hybrid, which crun refuses);
#   2. deploy/ as an engineer applies it, server-side apply to the lab's API server (podrun.py
#      apply): docs/kubernetes-rbac.yaml, the Secrets asap2-e2e-config (lab/harness-kube.yaml made
#      in-cluster: no kubeconfig, the SSH key beside it) and asap2-e2e-clouds (the lab's clouds.yaml),
#      deploy/pvc.yaml, deploy/job.yaml with the loaded image and the lab's arguments (the offload
#      checks and tcp-p1, as lab/kube/job.sh's step 1);
#   3. the Job read back as the API server stored it, its pod run by podman as a kubelet runs it
#      (podrun.py podman: user, read-only root, no capabilities, the Secrets' files with their mode
#      and fsGroup, the service account's token and CA at the standard path, no kubeconfig); it must
#      exit 0 with results.json on the volume, its hypervisors reached through the in-cluster
#      service account, the offload checks and tcp-p1 passed, nothing of its run left in OpenStack;
#   4. the same pod again, stopped as a kubelet stops it (podman stop -t terminationGracePeriodSeconds:
#      SIGTERM, SIGKILL after the grace) once its offload checks run: the harness must tear down
#      within the grace and leave nothing; the time from SIGTERM to exit is printed;
#   5. the applied objects deleted, the image removed: nothing of this phase is left.
# Prints "ok:" or "FAILED:" per claim; exit status non-zero when any did not hold.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:/usr/bin:/usr/sbin:/bin:/sbin:$PATH
ROOT=$PWD
OUT=$(realpath -m "${1:?usage: lab/kube/deploy.sh OUT}")
LAB_STATE=${LAB_STATE:-/var/lib/asap2lab}
KSTATE=$LAB_STATE/kube
export OS_CLIENT_CONFIG_FILE=${OS_CLIENT_CONFIG_FILE:-$LAB_STATE/clouds.yaml}
NS=openstack JOB=asap2-e2e-run
LAB_DIR=$ROOT/lab
source lab/releases/select.sh   # rx: the release's openstack CLI
mkdir -p "$OUT"
status=0
ok() { echo "ok: $*"; }
failed() { echo "FAILED: $*" >&2; status=1; }
die() { echo "lab/kube/deploy.sh: $*" >&2; exit 2; }
for f in "$KSTATE/admin.kubeconfig" "$KSTATE/etc/admin.token" "$KSTATE/pki/ca.crt" "$LAB_STATE/clouds.yaml"; do
  [ -r "$f" ] || die "$f missing: LAB_K8S=1 make lab-up (or bash lab/kube/up.sh)"
done
command -v podman >/dev/null || die "no podman: bash lab/install.sh (LAB_K8S=1 installs Debian's podman and runc)"
export KUBE_SERVER KUBE_CA=$KSTATE/pki/ca.crt KUBE_TOKEN_FILE=$KSTATE/etc/admin.token
KUBE_SERVER=$(awk '/server:/ {print $2; exit}' "$KSTATE/admin.kubeconfig")
SERVER=${KUBE_SERVER#https://}
podrun() { python3 lab/kube/podrun.py "$@"; }
pm() { podman --runtime runc "$@"; }
# podman's defaults raise RLIMIT_NOFILE and RLIMIT_NPROC to values this sandbox may not grant;
# a kubelet gives the container the runtime's, which these are.
LIMITS=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=8192:8192)

# ------------------------------------------------------------------ 1. the artifact
echo "== the artifact: make image, podman load"
t=$(date +%s)
make -s image DIST="$OUT/dist" REPORT_DIR="$OUT" >"$OUT/image.log" 2>&1 || die "make image failed: $(tail -n 20 "$OUT/image.log")"
TAG=$(awk '$1 == "image" {print $2; exit}' "$OUT/image.log")
[ -n "$TAG" ] || die "make image printed no tag ($OUT/image.log)"
sed 's/^/  /' "$OUT/image.log" | grep -E '^  (image|digest|size) '
IMAGE=localhost/$TAG
pm load -q -i "$OUT/asap2-e2e.tar" >/dev/null || die "podman load -i $OUT/asap2-e2e.tar failed"
ok "image $IMAGE built and loaded in $(( $(date +%s) - t ))s"
rm -rf "$OUT/dist" "$OUT/asap2-e2e.tar" "$OUT/image"   # 200 MB; the image is in podman's store
OBJECTS=(Job/$JOB PersistentVolumeClaim/asap2-e2e-results Secret/asap2-e2e-config Secret/asap2-e2e-clouds)
cleanup() {
  pm rm -f -t 0 asap2-e2e-lab asap2-e2e-lab-term >/dev/null 2>&1 || true
  podrun delete "$NS" "${OBJECTS[@]}" >"$OUT/delete.log" 2>&1; local rc=$?
  pm rmi -f "$IMAGE" >/dev/null 2>&1 || true
  return $rc
}
trap cleanup EXIT

# ------------------------------------------------------------------ 2. deploy/ applied
echo "== deploy/ applied to the lab's API server (server-side apply)"
cfgdir=$OUT/secret-config
rm -rf "$cfgdir"; mkdir -p "$cfgdir"
# In-cluster: the service account's credentials, no kubeconfig; the key and the results where the
# Job mounts them.
sed -e '/^    kubeconfig: /d' \
    -e "s#^  private_key: .*#  private_key: /etc/asap2-e2e/id_ed25519#" \
    -e "s#^  public_key: .*#  public_key: /etc/asap2-e2e/id_ed25519.pub#" \
    -e "s#^  output_dir: .*#  output_dir: /results#" lab/harness-kube.yaml >"$cfgdir/harness.yaml"
grep -q kubeconfig: "$cfgdir/harness.yaml" && die "$cfgdir/harness.yaml still names a kubeconfig"
cp "$LAB_STATE/ssh/id_ed25519" "$LAB_STATE/ssh/id_ed25519.pub" "$cfgdir/"
# What an earlier, killed phase may have left: gone before this one applies anything.
podrun delete "$NS" "${OBJECTS[@]}" >/dev/null 2>&1 || die "objects of an earlier phase cannot be deleted: python3 lab/kube/podrun.py delete $NS ${OBJECTS[*]}"
ARGS='["run","-config","/etc/asap2-e2e/harness.yaml","-out","/results","-labels","offload || tcp-p1","perf"]'
t=$(date +%s)
if { podrun apply docs/kubernetes-rbac.yaml &&
     podrun secret "$NS" asap2-e2e-config "$cfgdir"/* &&
     podrun secret "$NS" asap2-e2e-clouds "$LAB_STATE/clouds.yaml" &&
     podrun apply deploy/pvc.yaml &&
     podrun apply --image "$IMAGE" --args "$ARGS" deploy/job.yaml; } >"$OUT/apply.log" 2>&1; then
  sed 's/^/  /' "$OUT/apply.log"
  ok "the API server accepted docs/kubernetes-rbac.yaml, the two Secrets, deploy/pvc.yaml and deploy/job.yaml (server-side apply)"
else
  cat "$OUT/apply.log" >&2
  failed "server-side apply refused ($OUT/apply.log)"
  exit 1
fi
rm -rf "$cfgdir"

# run_pod NAME DIR: the Job's pod as podman's container NAME, its volumes under DIR; prints the
# grace on fd 3. Detached: the caller waits or stops it.
run_pod() {
  local name=$1 dir=$2 args grace
  rm -rf "$dir"; mkdir -p "$dir"
  args=$(podrun podman "$NS" "$JOB" "$dir" "$name" "$SERVER") || return 1
  grace=$(sed -n 's/^# grace //p' <<<"$args")
  mapfile -t argv < <(grep -v '^# grace ' <<<"$args")
  printf '%s\n' "${argv[@]}" >"$dir/podman-args.txt"
  echo "$grace" >"$dir/grace"
  pm run -d "${LIMITS[@]}" "${argv[@]}" >/dev/null
}
run_dir_of() { find "$1" -mindepth 1 -maxdepth 1 -type d -name '20*' | sort | tail -n 1; }
# leftovers RUN_ID: what of the run OpenStack still lists (the openstack CLI as admin, as make lab's
# leftovers phase), one line each.
leftovers() {
  local what
  for what in "server list --all-projects" "port list" "network list" "subnet list" "security group list" \
              "server group list --all-projects" "flavor list --all"; do
    rx openstack --os-cloud asap2lab-admin $what -f value -c Name 2>&1 | sed "s/^/$what: /"
  done | grep -F -- "-$1-" || true
}

# ------------------------------------------------------------------ 3. the Job's pod, in-cluster
echo "== the Job's pod under podman: the offload checks and tcp-p1, in-cluster credentials"
POD=$OUT/pod
t0=$(date +%s)
if ! run_pod asap2-e2e-lab "$POD"; then
  failed "the Job's pod template could not be run ($POD)"
else
  rc=$(pm wait asap2-e2e-lab); pm logs asap2-e2e-lab >"$POD/console.log" 2>&1
  pm rm -f asap2-e2e-lab >/dev/null 2>&1
  secs=$(( $(date +%s) - t0 ))
  res=$POD/volumes/results
  run=$(run_dir_of "$res")
  if [ "$rc" = 0 ] && [ -n "$run" ] && [ -s "$run/results.json" ]; then
    ok "the pod exited 0 after ${secs}s (apply to results: $(( $(date +%s) - t ))s); results on the volume: ${run#"$OUT"/}"
  else
    failed "the pod exited $rc after ${secs}s; results: ${run:-none} (console: $POD/console.log: $(tail -n 5 "$POD/console.log"))"
  fi
  if [ -n "$run" ]; then
    if grep -q 'credentials from in-cluster service account (no kubeconfig)' "$run/harness.log"; then
      ok "its hypervisors were reached through the in-cluster service account (no kubeconfig)"
    else
      failed "harness.log does not say it reached the hypervisors through the in-cluster service account ($run/harness.log)"
    fi
    if verdict=$(python3 - "$run/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
checks = r.get('offload') or []
p1 = [p for p in r.get('profiles') or [] if p.get('id') == 'tcp-p1']
reps = [x for p in p1 for x in p.get('runs') or [] if not x.get('error') and x.get('delivered_bps', 0) > 0]
problems = []
if not checks:
    problems.append('no offload checks')
if not reps:
    problems.append('no tcp-p1 repeat that delivered')
if r.get('errors'):
    problems.append('run errors: %s' % r['errors'])
print('; '.join(problems) if problems else '%d offload check(s), tcp-p1 %d repeat(s), median %.1f Mbit/s' % (
    len(checks), len(reps), sorted(x['delivered_bps'] for x in reps)[len(reps) // 2] / 1e6))
sys.exit(1 if problems else 0)
PY
); then
      ok "results.json on the volume: $verdict"
    else
      failed "results.json on the volume: $verdict ($run/results.json)"
    fi
    id=$(basename "$run"); left=$(leftovers "$id")
    [ -z "$left" ] && ok "nothing of run $id is left in OpenStack" || failed "run $id left: $left"
    root_files=$(find "$res" -mindepth 1 -user 0 | head -n 3)
    [ -z "$root_files" ] && ok "every file on the volume is the pod user's (65532)" || failed "files written as root on the volume (the pod runs as 65532): $root_files"
    echo "$run" >"$OUT/pod-run"   # lab/kube/job.sh's step 1 reads this run
  fi
fi

# ------------------------------------------------------------------ 4. stopped as a kubelet stops it
echo "== the Job's pod stopped during its offload checks (SIGTERM, the grace, SIGKILL)"
TERM_DIR=$OUT/pod-sigterm
if ! run_pod asap2-e2e-lab-term "$TERM_DIR"; then
  failed "the Job's pod template could not be run ($TERM_DIR)"
else
  grace=$(cat "$TERM_DIR/grace")
  reached=
  for _ in $(seq 600); do
    r=$(run_dir_of "$TERM_DIR/volumes/results")
    if [ -n "$r" ] && grep -q 'offload checks during a sustained' "$r/harness.log" 2>/dev/null; then reached=$r; break; fi
    [ "$(pm inspect -f '{{.State.Running}}' asap2-e2e-lab-term 2>/dev/null)" = true ] || break
    sleep 1
  done
  if [ -z "$reached" ]; then
    failed "the pod never reached its offload checks ($TERM_DIR)"
    pm stop -t "$grace" asap2-e2e-lab-term >/dev/null 2>&1
  else
    ts=$(date +%s.%N)
    pm stop -t "$grace" asap2-e2e-lab-term >/dev/null
    te=$(date +%s.%N)
    rc=$(pm inspect -f '{{.State.ExitCode}}' asap2-e2e-lab-term)
    pm logs asap2-e2e-lab-term >"$TERM_DIR/console.log" 2>&1
    took=$(python3 -c "print('%.1f' % ($te - $ts))")
    id=$(basename "$reached"); left=$(leftovers "$id")
    if python3 -c "import sys; sys.exit(0 if $te - $ts < $grace else 1)" && [ "$rc" != 137 ]; then
      ok "SIGTERM during the checks: the pod exited $rc ${took}s later, within its grace of ${grace}s"
    else
      failed "SIGTERM during the checks: exit $rc after ${took}s (grace ${grace}s; 137 is the SIGKILL after it)"
    fi
    grep -q 'teardown: ' "$reached/harness.log" && ok "it tore its run down ($(grep -c 'teardown: ' "$reached/harness.log") teardown lines)" ||
      failed "no teardown in $reached/harness.log"
    [ -z "$left" ] && ok "nothing of run $id is left in OpenStack" || failed "run $id left after SIGTERM: $left"
  fi
  pm rm -f asap2-e2e-lab-term >/dev/null 2>&1
fi

# ------------------------------------------------------------------ 5. nothing left
trap - EXIT
if cleanup; then
  sed 's/^/  /' "$OUT/delete.log"
  ok "the API server has none of the applied Job, claim and Secrets any more"
else
  failed "deleting what this phase applied: $(cat "$OUT/delete.log")"
fi
left=$(pm ps -a --format '{{.Names}}' | grep -E '^asap2-e2e-lab' || true)
imgs=$(pm images -q "$IMAGE" 2>/dev/null)
if [ -z "$left" ] && [ -z "$imgs" ]; then ok "no container and no image of this phase left"; else failed "left: containers '$left' image '$imgs'"; fi
exit $status
