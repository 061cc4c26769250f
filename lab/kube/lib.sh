# Shared by lab/kube/up.sh, down.sh, status (sourced after lab/lib/common.sh).
KUBE_STATE=$LAB_STATE/kube      # under $LAB_STATE: lab/down.sh removes it with the rest
KUBE_PIDS=$KUBE_STATE/pids      # not $PIDS: lab/up.sh's health check stays about OpenStack
KUBE_PKI=$KUBE_STATE/pki
KUBE_ETC=$KUBE_STATE/etc
KUBE_TOOLFARM=$KUBE_STATE/toolfarm   # the OVS containers' PATH: every program but tcpdump (up.sh)
KUBE_ETCD_PORT=12379            # 127.0.0.1 only
KUBE_ETCD_PEER_PORT=12380
KUBE_API_PORT=16443             # on $CTL_IP, the lab's control address
KUBE_KUBELET_PORT=10250         # each kwok, on its hypervisor's control address
# The OIDC identity provider (lab/oidc, issue 36) the API server trusts, and its user's read-only
# kubeconfig (a Secret's mount, as the harness gets one in a Kubernetes Job).
KUBE_OIDC_PORT=16445            # 127.0.0.1 only: the API server and the harness run on this machine
KUBE_OIDC_URL=https://127.0.0.1:$KUBE_OIDC_PORT
KUBE_OIDC_STATE=$KUBE_STATE/oidc          # the issuer's CA (ca.crt, written by it), keys, refresh-tokens
KUBE_OIDC_CLIENT=asap2lab                 # client id = the id-tokens' audience
KUBE_OIDC_USER=asap2lab-re                # its preferred_username; the API server's user oidc:asap2lab-re
KUBE_OIDC_PREFIX=oidc:
# id-token lifetime: 20 s, not MOSK Keycloak's minutes, so that a 2-minute run of the checks
# renews it several times (client-go renews 10 s before exp: every ~10 s of calls)
KUBE_OIDC_LIFETIME=${LAB_OIDC_LIFETIME:-20s}
KUBE_OIDC_SECRET=$KUBE_STATE/oidc-secret  # kubeconfig + idp-ca.crt, 0444 in a 0555 directory

kube_running() { local f=$KUBE_PIDS/$1.pid; [ -s "$f" ] && alive "$(cat "$f")" && is_lab_pid "$(cat "$f")"; }
kube_rand() { head -c 30 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | cut -c1-32; }
kube_py() {
  KUBE_SERVER="https://$CTL_IP:$KUBE_API_PORT" KUBE_CA="$KUBE_PKI/ca.crt" KUBE_TOKEN_FILE="$KUBE_ETC/admin.token" \
    python3 "$LAB_DIR/kube/kube_setup.py" "$@"
}
