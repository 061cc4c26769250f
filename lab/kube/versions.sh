# Pinned versions of the lab's Kubernetes control plane (lab/kube/README.md). Sourced by
# lab/kube/build.sh and lab/kube/up.sh; changing a line here rebuilds that binary at the next build.
KUBE_ETCD_MODULE=go.etcd.io/etcd/server/v3
KUBE_ETCD_VERSION=v3.6.16
KUBE_K8S_MODULE=k8s.io/kubernetes
KUBE_K8S_VERSION=v1.37.2
# k8s.io/kubernetes replaces its staging modules (k8s.io/api, k8s.io/apimachinery, ...) with
# ./staging/src/...: a module depending on it must replace each with its published release.
KUBE_STAGING_VERSION=v0.37.2
KUBE_KWOK_MODULE=sigs.k8s.io/kwok
KUBE_KWOK_VERSION=v0.8.0
# The build products (bin/, stamps, build log) live OUTSIDE $LAB_STATE like the Epoxy root:
# lab/down.sh deletes $LAB_STATE, and a kube-apiserver costs ~10 min of a 2-core machine.
LAB_KUBE_CACHE=${LAB_KUBE_CACHE:-/var/cache/asap2lab/kube}
