#!/bin/bash
# The lab's Kubernetes control plane (LAB_K8S=1 phase of lab/up.sh, or alone against an up lab):
# MOSK's access path (hypervisors.access: kubernetes) with real engines, no kubelet:
#   etcd                127.0.0.1:12379 (loopback only, data in $KUBE_STATE/etcd)
#   kube-apiserver      https://198.18.0.1:16443 (the lab's control address), static token file,
#                       Node,RBAC authorization, service-account keys, --endpoint-reconciler-type=none
#   oidc                https://127.0.0.1:16445 (lab/oidc, built here): an OpenID Connect identity
#                       provider with a CA of its own, RS256 id-tokens of $KUBE_OIDC_LIFETIME (20 s) by
#                       refresh grant; the API server trusts it (--authentication-config)
#   kwok per hypervisor INSIDE that hypervisor (lib/hv-exec N: its netns, /run/openvswitch, hostname
#                       = Nova's service host), serving the kubelet API on 198.18.0.1N:10250; it keeps
#                       its Node Ready and its pods Running, and runs an exec into them as a local
#                       process there (ClusterExec), where the SSH path's commands run today
# (LAB_KUBE_APISERVER_FLAGS: more kube-apiserver flags, for a kube-apiserver up.sh starts; lab/kube/spdy.sh)
# and the objects (kube_setup.py): namespace openstack with its default service account, a Node per
# hypervisor named as Nova's service host (computeN), an OVS DaemonSet-shaped pod (rockoon's labels,
# container openvswitch-vswitchd) and an OVN-shaped one (ovn-controller, container vswitchd) on each,
# whose containers' exec finds no tcpdump (a PATH of $KUBE_TOOLFARM: every program but tcpdump), so
# the harness runs it in a node debug pod (the debug container keeps every tool),
# docs/kubernetes-rbac.yaml as written plus its no-pods/exec variant, a PodSecurity restricted
# namespace, and kubeconfigs in $KUBE_STATE: harness.kubeconfig (the docs' service account),
# noexec.kubeconfig, admin.kubeconfig; and oidc-secret/kubeconfig, the OIDC user oidc:asap2lab-re
# (the docs' Role bound to it) with client-go's auth-provider oidc and a refresh-token, 0444 in a
# 0555 directory as a Secret's mount (lab/kube/job.sh step 5 mounts it read-only for root too).
# Binaries: lab/kube/build.sh ($LAB_KUBE_CACHE/bin; built here when missing).
# Every process is a lab process (marker ASAP2LAB_PROC=$LAB_STATE, pid in $KUBE_STATE/pids): lab/down.sh
# ends them and removes $LAB_STATE; lab/kube/down.sh ends only these. Idempotent: what runs is kept.
set -euo pipefail
KUBE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$KUBE_DIR/../lib/common.sh"
source "$KUBE_DIR/versions.sh"
source "$KUBE_DIR/lib.sh"
[ "$(id -u)" = 0 ] || { echo "lab/kube/up.sh: must run as root" >&2; exit 1; }
lab_lock kube/up.sh || exit 1   # not beside a lab/up.sh or lab/down.sh (from lab/up.sh: its lock is held already)
T0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "[kube-up +$(since "$T0")s] $*"; }
die() { echo "lab/kube/up.sh: $*" >&2; exit 1; }
for n in $HVS; do
  [ -d "$(hv_rundir "$n")" ] && ip netns list | grep -q "^$(hv_ns "$n")\b" ||
    die "hypervisor $n (netns $(hv_ns "$n"), OVS rundir $(hv_rundir "$n")) missing: is the lab up? (make lab-up)"
done

LAB_KUBE_REBUILD=0 bash "$KUBE_DIR/build.sh"   # what is missing only; a rebuild from nothing is build.sh --rebuild
BIN=$LAB_KUBE_CACHE/bin
mkdir -p "$KUBE_PIDS" "$KUBE_PKI" "$KUBE_ETC" "$LOGS"
chmod 700 "$KUBE_STATE"

# kstart NAME CMD...: as lab/up.sh's start: own session and process group, lab marker, output to
# $LOGS/kube-NAME.out, pid in $KUBE_PIDS/NAME.pid; kept when it runs already.
kstart() {
  local name=$1; shift
  if kube_running "$name"; then say "$name runs (pid $(cat "$KUBE_PIDS/$name.pid"))"; return 0; fi
  ASAP2LAB_PROC=$LAB_STATE setsid "$@" >>"$LOGS/kube-$name.out" 2>&1 </dev/null 9<&- &
  echo $! >"$KUBE_PIDS/$name.pid"
  say "$name started (pid $!, log $LOGS/kube-$name.out)"
}
wait_for() { # wait_for WHAT TIMEOUT_S CMD...
  local what=$1 timeout=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${timeout}s waiting for $what (logs $LOGS/kube-*.out)"
    sleep 0.5
  done
}

# ------------------------------------------------------------------ keys and certificates
# One CA: the API server's serving cert (the lab's control address), each kwok's kubelet serving
# cert (its hypervisor's address; the API server checks it: --kubelet-certificate-authority), the
# API server's kubelet client cert; a service-account signing key; the static tokens.
cert() { # cert NAME CN SAN [O]: $KUBE_PKI/NAME.{key,crt} signed by the lab CA
  local name=$1 cn=$2 san=$3 o=${4:-}
  [ -s "$KUBE_PKI/$name.crt" ] && return 0
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$KUBE_PKI/$name.key" \
    -subj "/CN=$cn${o:+/O=$o}" -out "$KUBE_PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$KUBE_PKI/$name.csr" -CA "$KUBE_PKI/ca.crt" -CAkey "$KUBE_PKI/ca.key" -CAcreateserial \
    -days 30 -out "$KUBE_PKI/$name.crt" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n' "$san") 2>/dev/null
  rm -f "$KUBE_PKI/$name.csr"
}
pki() {
  if [ ! -s "$KUBE_PKI/ca.crt" ]; then
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
      -subj /CN=asap2lab-kube-ca -keyout "$KUBE_PKI/ca.key" -out "$KUBE_PKI/ca.crt" 2>/dev/null
  fi
  cert apiserver kube-apiserver "IP:$CTL_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default.svc"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client "DNS:kube-apiserver" system:masters
  local n
  for n in $HVS; do cert "kwok-hv$n" "$(hv_host "$n")" "IP:$(hv_ctlip "$n"),DNS:$(hv_host "$n")"; done
  [ -s "$KUBE_PKI/sa.key" ] || { openssl genrsa -out "$KUBE_PKI/sa.key" 2048 2>/dev/null
                                 openssl rsa -in "$KUBE_PKI/sa.key" -pubout -out "$KUBE_PKI/sa.pub" 2>/dev/null; }
  if [ ! -s "$KUBE_ETC/tokens.csv" ]; then
    # token,user,uid,"groups": the lab admin and each kwok (they patch node and pod status) are
    # system:masters; the harness authenticates with a service-account token (kube_setup.py token)
    { echo "$(kube_rand),asap2lab-admin,asap2lab-admin,\"system:masters\""
      for n in $HVS; do echo "$(kube_rand),asap2lab-kwok-hv$n,asap2lab-kwok-hv$n,\"system:masters\""; done
    } >"$KUBE_ETC/tokens.csv"
    chmod 600 "$KUBE_ETC/tokens.csv"
  fi
  awk -F, '$2 == "asap2lab-admin" {print $1}' "$KUBE_ETC/tokens.csv" >"$KUBE_ETC/admin.token"
}

# ------------------------------------------------------------------ the OIDC identity provider
# lab/oidc, built from this tree into $KUBE_STATE/bin (standard library only: seconds), started before
# the API server, whose authentication configuration holds the CA the issuer wrote out. Structured
# (--authentication-config, apiserver.config.k8s.io/v1: GA, its feature gate gone by v1.37) rather
# than the --oidc-* flags v1.37 still accepts: the CA is inline (no file beside it to keep in step),
# the username prefix is explicit, and it is the form the flags are the legacy subset of.
oidc_issuer() {
  mkdir -p "$KUBE_OIDC_STATE" "$KUBE_STATE/bin"
  chmod 700 "$KUBE_OIDC_STATE"
  if [ ! -s "$KUBE_OIDC_STATE/refresh-tokens" ]; then
    # what a login at MOSK's Keycloak would have left in the engineer's kubeconfig
    echo "$(kube_rand)$(kube_rand) $KUBE_OIDC_USER" >"$KUBE_OIDC_STATE/refresh-tokens"
    chmod 600 "$KUBE_OIDC_STATE/refresh-tokens"
  fi
  if ! kube_running oidc; then
    case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) [ -x /usr/local/go/bin/go ] && PATH=/usr/local/go/bin:$PATH ;; esac
    (cd "$LAB_DIR/.." && go build -trimpath -o "$KUBE_STATE/bin/oidc" ./lab/oidc) ||
      die "building the OIDC identity provider (go build ./lab/oidc) failed"
  fi
  kstart oidc "$KUBE_STATE/bin/oidc" -listen "127.0.0.1:$KUBE_OIDC_PORT" -dir "$KUBE_OIDC_STATE" \
    -refresh-tokens "$KUBE_OIDC_STATE/refresh-tokens" -client-id "$KUBE_OIDC_CLIENT" \
    -username-claim preferred_username -lifetime "$KUBE_OIDC_LIFETIME"
  wait_for "the OIDC issuer $KUBE_OIDC_URL" 60 \
    curl -fsS -m 2 --cacert "$KUBE_OIDC_STATE/ca.crt" "$KUBE_OIDC_URL/.well-known/openid-configuration"
  cat >"$KUBE_ETC/authentication.yaml" <<EOF
# written by lab/kube/up.sh: the lab's OIDC issuer (lab/oidc) for kube-apiserver --authentication-config
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: $KUBE_OIDC_URL
    audiences: [$KUBE_OIDC_CLIENT]
    certificateAuthority: |
$(sed 's/^/      /' "$KUBE_OIDC_STATE/ca.crt")
  claimMappings:
    username:
      claim: preferred_username
      prefix: "$KUBE_OIDC_PREFIX"
EOF
}

# ------------------------------------------------------------------ etcd + kube-apiserver
control_plane() {
  kstart etcd "$BIN/etcd" --name asap2lab --data-dir "$KUBE_STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$KUBE_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$KUBE_ETCD_PEER_PORT" \
    --initial-cluster "asap2lab=http://127.0.0.1:$KUBE_ETCD_PEER_PORT" --listen-metrics-urls '' \
    --unsafe-no-fsync --quota-backend-bytes $((512 << 20)) --log-level warn
  wait_for "etcd on 127.0.0.1:$KUBE_ETCD_PORT" 60 curl -fsS -m 2 "http://127.0.0.1:$KUBE_ETCD_PORT/health"
  # --endpoint-reconciler-type=none: the default reconciler refuses a loopback/lab advertise address
  # and no Service needs the API server's endpoints here.
  kstart kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$KUBE_ETCD_PORT" \
    --bind-address "$CTL_IP" --secure-port "$KUBE_API_PORT" --advertise-address "$CTL_IP" \
    --endpoint-reconciler-type none \
    --tls-cert-file "$KUBE_PKI/apiserver.crt" --tls-private-key-file "$KUBE_PKI/apiserver.key" \
    --client-ca-file "$KUBE_PKI/ca.crt" --token-auth-file "$KUBE_ETC/tokens.csv" \
    --authentication-config "$KUBE_ETC/authentication.yaml" \
    --authorization-mode Node,RBAC --allow-privileged=true \
    --service-account-issuer "https://$CTL_IP:$KUBE_API_PORT" \
    --service-account-key-file "$KUBE_PKI/sa.pub" --service-account-signing-key-file "$KUBE_PKI/sa.key" \
    --service-cluster-ip-range 198.19.96.0/24 \
    --kubelet-certificate-authority "$KUBE_PKI/ca.crt" \
    --kubelet-client-certificate "$KUBE_PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$KUBE_PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --profiling=false --enable-priority-and-fairness=false --watch-cache=true ${LAB_KUBE_APISERVER_FLAGS:-}
  wait_for "kube-apiserver https://$CTL_IP:$KUBE_API_PORT/readyz" 180 \
    curl -fsS -m 3 --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $(cat "$KUBE_ETC/admin.token")" \
    "https://$CTL_IP:$KUBE_API_PORT/readyz"
  say "kube-apiserver answers: $(curl -fsS -m 3 --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $(cat "$KUBE_ETC/admin.token")" \
    "https://$CTL_IP:$KUBE_API_PORT/version" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["gitVersion"], v["goVersion"])')"
}

# ------------------------------------------------------------------ kwok per hypervisor
# Its configuration: the stages of kwok's own kustomize/stage (node/fast, node/heartbeat, pod/fast,
# copied from the pinned module by build.sh) and a ClusterExec that runs an exec into any container
# as a local process of this kwok, i.e. inside the hypervisor.
kwok_config() {
  local n=$1 f=$KUBE_ETC/kwok-hv$n.yaml s first=1
  [ -d "$LAB_KUBE_CACHE/kwok-stages" ] || die "$LAB_KUBE_CACHE/kwok-stages missing: bash lab/kube/build.sh --rebuild"
  { for s in "$LAB_KUBE_CACHE"/kwok-stages/*.yaml; do
      [ $first = 1 ] || echo ---
      first=0
      cat "$s"
    done
    cat <<EOF
---
# exec into a pod of $(hv_host "$n"): a local process of this kwok (inside hypervisor $n). The
# OVS-shaped pods' containers (rockoon's openvswitch-vswitchd; ovn-controller's controller and
# vswitchd) find their programs through $KUBE_TOOLFARM only, which has every program of the
# root but tcpdump, like an OVS image without it: the harness must run tcpdump in a node debug
# pod. Any other container (the debug pod's "debug") has kwok's own PATH, every tool.
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: asap2lab-hv$n-local
spec:
  execs:
  - containers: [openvswitch-vswitchd, controller, vswitchd]
    local:
      workDir: /
      envs:
      - name: PATH
        value: $KUBE_TOOLFARM
  - local:
      workDir: /
EOF
  } >"$f"
  cat >"$KUBE_ETC/kwok-hv$n.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: asap2lab
  cluster: {server: "https://$CTL_IP:$KUBE_API_PORT", certificate-authority: "$KUBE_PKI/ca.crt"}
users:
- name: asap2lab-kwok-hv$n
  user: {token: "$(awk -F, -v u="asap2lab-kwok-hv$n" '$2 == u {print $1}' "$KUBE_ETC/tokens.csv")"}
contexts:
- name: asap2lab
  context: {cluster: asap2lab, user: asap2lab-kwok-hv$n}
current-context: asap2lab
EOF
  chmod 600 "$KUBE_ETC/kwok-hv$n.kubeconfig"
}
# toolfarm: $KUBE_TOOLFARM, made where kwok runs (through the release's LAB_CMD, so on Epoxy of
# its root's programs), less what the OVS containers lack (kube_setup.py OVS_CONTAINER_LACKS).
toolfarm() {
  "${LAB_CMD[@]}" python3 "$LAB_DIR/kube/kube_setup.py" toolfarm "$KUBE_TOOLFARM" tcpdump
}
kwoks() {
  local n
  toolfarm
  for n in $HVS; do
    kwok_config "$n"
    # HOME: kwok reads ~/.kwok/kwok.yaml as its default config; the lab's own only. Through the
    # release's prefix (LAB_CMD, as sshd: on Epoxy its root, with the binaries' directory bound in),
    # so an exec'd command runs the same ovs-vsctl, tc, tcpdump as the SSH path.
    kstart "kwok-hv$n" env HOME="$KUBE_STATE" ROOTFS_BINDS="$BIN" "$LAB_DIR/lib/hv-exec" "$n" --hostname "$(hv_host "$n")" \
      "${LAB_CMD[@]}" "$BIN/kwok" --config "$KUBE_ETC/kwok-hv$n.yaml" --kubeconfig "$KUBE_ETC/kwok-hv$n.kubeconfig" \
      --manage-single-node "$(hv_host "$n")" --node-ip "$(hv_ctlip "$n")" --node-port "$KUBE_KUBELET_PORT" \
      --server-address "$(hv_ctlip "$n"):$KUBE_KUBELET_PORT" \
      --tls-cert-file "$KUBE_PKI/kwok-hv$n.crt" --tls-private-key-file "$KUBE_PKI/kwok-hv$n.key" \
      --cidr "198.19.6$n.0/24"
  done
  for n in $HVS; do
    wait_for "kwok of hv$n on $(hv_ctlip "$n"):$KUBE_KUBELET_PORT" 60 \
      curl -fsS -m 2 --cacert "$KUBE_PKI/ca.crt" "https://$(hv_ctlip "$n"):$KUBE_KUBELET_PORT/healthz"
  done
}

# ------------------------------------------------------------------ objects, tokens, kubeconfigs
kubeconfig() { # kubeconfig FILE USER TOKEN
  cat >"$1" <<EOF
# asap2lab Kubernetes ($2), written by lab/kube/up.sh
apiVersion: v1
kind: Config
clusters:
- name: asap2lab
  cluster:
    server: https://$CTL_IP:$KUBE_API_PORT
    certificate-authority-data: $(base64 -w0 "$KUBE_PKI/ca.crt")
users:
- name: $2
  user:
    token: $3
contexts:
- name: asap2lab
  context: {cluster: asap2lab, user: $2, namespace: openstack}
current-context: asap2lab
EOF
  chmod 600 "$1"
}
# oidc_kubeconfig: $KUBE_OIDC_SECRET/kubeconfig, the OIDC user's, as MOSK's Keycloak kubeconfigs are
# (auth-provider oidc: idp-issuer-url, client-id, refresh-token, idp-certificate-authority, and an
# id-token, long expired when a run reads it), with the issuer's CA beside it; made read-only. The
# id-token is one the API server was seen to accept as oidc:asap2lab-re (a SelfSubjectReview; its
# JWT authenticator starts in the background, so it is retried).
oidc_whoami() { # sets OIDC_ID (a fresh id-token) and OIDC_WHO (the API server's name for its user)
  local rt
  rt=$(awk 'NR == 1 {print $1}' "$KUBE_OIDC_STATE/refresh-tokens")
  OIDC_ID=$(curl -fsS -m 5 --cacert "$KUBE_OIDC_STATE/ca.crt" -u "$KUBE_OIDC_CLIENT:" -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$rt" "$KUBE_OIDC_URL/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id_token"])') &&
  OIDC_WHO=$(curl -fsS -m 5 --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $OIDC_ID" -H 'Content-Type: application/json' \
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
    "https://$CTL_IP:$KUBE_API_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["userInfo"]["username"])') &&
  [ "$OIDC_WHO" = "$KUBE_OIDC_PREFIX$KUBE_OIDC_USER" ]
}
oidc_kubeconfig() {
  local d=$KUBE_OIDC_SECRET
  wait_for "kube-apiserver to authenticate the issuer's id-token as $KUBE_OIDC_PREFIX$KUBE_OIDC_USER" 60 oidc_whoami
  mkdir -p "$d"
  chmod 755 "$d"
  rm -f "$d/kubeconfig" "$d/idp-ca.crt"
  cp "$KUBE_OIDC_STATE/ca.crt" "$d/idp-ca.crt"
  cat >"$d/kubeconfig" <<EOF
# asap2lab Kubernetes, the OIDC user $OIDC_WHO of lab/oidc (id-tokens of $KUBE_OIDC_LIFETIME),
# written by lab/kube/up.sh; read-only, as a Secret's mount
apiVersion: v1
kind: Config
clusters:
- name: asap2lab
  cluster:
    server: https://$CTL_IP:$KUBE_API_PORT
    certificate-authority-data: $(base64 -w0 "$KUBE_PKI/ca.crt")
users:
- name: $KUBE_OIDC_USER
  user:
    auth-provider:
      name: oidc
      config:
        idp-issuer-url: $KUBE_OIDC_URL
        client-id: $KUBE_OIDC_CLIENT
        idp-certificate-authority: $d/idp-ca.crt
        refresh-token: $(awk 'NR == 1 {print $1}' "$KUBE_OIDC_STATE/refresh-tokens")
        id-token: $OIDC_ID
contexts:
- name: asap2lab
  context: {cluster: asap2lab, user: $KUBE_OIDC_USER, namespace: openstack}
current-context: asap2lab
EOF
  chmod 444 "$d/kubeconfig" "$d/idp-ca.crt"
  chmod 555 "$d"
  say "OIDC user $OIDC_WHO: $d/kubeconfig (read-only; id-tokens of $KUBE_OIDC_LIFETIME from $KUBE_OIDC_URL)"
}
objects() {
  local hosts= n
  for n in $HVS; do hosts+="${hosts:+,}$(hv_host "$n")=$(hv_ctlip "$n")"; done
  kube_py objects "$hosts" "$KUBE_OIDC_PREFIX$KUBE_OIDC_USER"
  kwoks
  kube_py wait "$hosts" 90
  kubeconfig "$KUBE_STATE/admin.kubeconfig" asap2lab-admin "$(cat "$KUBE_ETC/admin.token")"
  # 7 days: a token outliving any run of the lab; the service accounts are docs/kubernetes-rbac.yaml's
  kubeconfig "$KUBE_STATE/harness.kubeconfig" asap2-e2e "$(kube_py token openstack asap2-e2e 604800)"
  kubeconfig "$KUBE_STATE/noexec.kubeconfig" asap2-e2e-noexec "$(kube_py token openstack asap2-e2e-noexec 604800)"
  oidc_kubeconfig
}

pki
oidc_issuer
control_plane
objects
say "UP: https://$CTL_IP:$KUBE_API_PORT; kubeconfigs $KUBE_STATE/{harness,noexec,admin}.kubeconfig, $KUBE_OIDC_SECRET/kubeconfig (OIDC, $KUBE_OIDC_URL); pids $KUBE_PIDS"
