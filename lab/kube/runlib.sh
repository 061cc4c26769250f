# Shared by lab/kube/job.sh and lab/kube/spdy.sh (sourced; the caller defines ROOT, OUT, ok and
# failed, and runs from the repository's root): the admin's view of the harness's debug pods, and
# the OIDC user with its read-only kubeconfig (issue 36) — the negative and the judgement of a run
# made as that user. make lab makes that run in the SPDY phase (lab/kube/spdy.sh: one suite run for
# both claims); lab/kube/job.sh alone makes its own (step 5).
RUNLIB_KSTATE=${LAB_STATE:-/var/lib/asap2lab}/kube
OIDC_SECRET=$RUNLIB_KSTATE/oidc-secret
OIDC_MIN_REFRESHES=${KUBE_OIDC_MIN_REFRESHES:-4}   # the preflight's refresh and three renewals

# debug_pods: the harness's node debug pods in the API (admin), "NS/NAME NODE RUN-ID" lines.
debug_pods() {
  KUBE_SERVER=$(awk '/server:/ {print $2; exit}' "$RUNLIB_KSTATE/admin.kubeconfig") KUBE_CA=$RUNLIB_KSTATE/pki/ca.crt \
    KUBE_TOKEN_FILE=$RUNLIB_KSTATE/etc/admin.token python3 lab/kube/kube_setup.py debug-pods "$@" 2>/dev/null
}

# kube_variant NAME SED...: lab/harness-kube.yaml changed by the sed expressions, in $OUT/NAME.yaml
# (output_dir made absolute: the copy is not in lab/).
kube_variant() {
  local name=$1; shift
  sed -e "s#^  output_dir: ../out#  output_dir: $ROOT/out#" "$@" lab/harness-kube.yaml >"$OUT/$name.yaml"
  echo "$OUT/$name.yaml"
}

# read_only DIR CMD...: CMD with DIR read-only as a Secret's mount is. As root (the lab) a read-only
# bind mount in a mount namespace of CMD's own, gone with it (propagation slave: what the lab mounts
# meanwhile, a new netns under /run/netns, still shows inside; nothing of it shows outside); as
# another user the modes up.sh gave.
read_only() {
  local dir=$1; shift
  if [ "$(id -u)" = 0 ]; then
    unshare --mount --propagation slave -- sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' sh "$dir" "$@"
  else
    "$@"
  fi
}
# oidc_stats: "GRANTS LIFETIME", the refresh grants the issuer served so far and its id-tokens' lifetime
oidc_stats() {
  curl -fsS -m 10 --cacert "$OIDC_SECRET/idp-ca.crt" "$(awk '/idp-issuer-url:/ {print $2; exit}' "$OIDC_SECRET/kubeconfig")/stats" |
    python3 -c 'import json,sys; s = json.load(sys.stdin); print(s["refresh_grants"], s["id_token_lifetime"])'
}
# oidc_ready: the OIDC user's kubeconfig is there and its issuer answers.
oidc_ready() { [ -r "$OIDC_SECRET/kubeconfig" ] && oidc_stats >/dev/null; }

# oidc_negative: client-go with the read-only kubeconfig in place must fail to persist its tokens.
oidc_negative() {
  local out rc
  out=$(read_only "$OIDC_SECRET" go run ./lab/oidc/plainclient -kubeconfig "$OIDC_SECRET/kubeconfig" 2>&1); rc=$?
  echo "$out" | sed 's/^/  plainclient: /'
  if [ $rc = 1 ] && grep -q 'could not persist new tokens.*read-only file system' <<<"$out"; then
    ok "client-go with the read-only kubeconfig in place failed as issue 36 says (could not persist new tokens: read-only file system)"
  else
    failed "client-go with the read-only kubeconfig in place: exit $rc, want 1 and \"could not persist new tokens ... read-only file system\""
  fi
}

# oidc_config: lab/harness-kube.yaml with the OIDC user's kubeconfig, in $OUT/oidc.yaml.
oidc_config() { kube_variant oidc -e "s#$RUNLIB_KSTATE/harness.kubeconfig#$OIDC_SECRET/kubeconfig#"; }

# oidc_begin, then the run under read_only "$OIDC_SECRET" with oidc_config, then
# oidc_judge RUN_DIR SECS: the preflight obtained the credentials afresh, the issuer served at least
# OIDC_MIN_REFRESHES refresh grants meanwhile, the kubeconfig is unchanged, no debug pod is left.
oidc_begin() {
  local st; st=$(oidc_stats) || return 1
  OIDC_G1=${st%% *} OIDC_LIFE=${st#* }
  OIDC_SUM0=$(sha256sum <"$OIDC_SECRET/kubeconfig")
}
oidc_judge() {
  local run=$1 secs=$2 st g2= n fresh left
  st=$(oidc_stats) && g2=${st%% *}
  n=$(( ${g2:-0} - OIDC_G1 ))
  fresh=$(grep -m1 'kubernetes preflight: ok: credentials of .* obtained afresh (auth-provider oidc' "$run/harness.log" 2>/dev/null)
  echo "  the run took ${secs}s; the issuer served $n refresh grant(s) meanwhile ($OIDC_G1 -> ${g2:-?}, id-tokens of $OIDC_LIFE); want >= $OIDC_MIN_REFRESHES"
  if [ -z "$fresh" ]; then
    failed "no preflight line 'credentials ... obtained afresh (auth-provider oidc' in ${run:-the run}/harness.log"
  elif [ -z "$g2" ] || [ "$n" -lt "$OIDC_MIN_REFRESHES" ]; then
    failed "the issuer served $n refresh grant(s) during the ${secs}s run, want >= $OIDC_MIN_REFRESHES (several expired id-tokens renewed)"
  elif [ "$(sha256sum <"$OIDC_SECRET/kubeconfig")" != "$OIDC_SUM0" ]; then
    failed "the read-only kubeconfig $OIDC_SECRET/kubeconfig changed"
  elif left=$(debug_pods) && [ -n "$left" ]; then
    failed "debug pods left after the OIDC user's run: $left"
  else
    ok "the run as the OIDC user passed in ${secs}s with the kubeconfig read-only: $n refresh grants (the preflight's and $(( n - 1 )) renewals), each persisted to the run's private copy; the kubeconfig unchanged"
  fi
}
