#!/bin/bash
# Build the lab's Kubernetes control plane from the Go module proxy at the versions pinned in
# lab/kube/versions.sh: etcd (etcdmain), kube-apiserver (app.NewAPIServerCommand of
# k8s.io/kubernetes, staging modules replaced by their releases) and kwok.
#   bash lab/kube/build.sh              build what is missing or stale into $LAB_KUBE_CACHE/bin
#   bash lab/kube/build.sh --rebuild    (or LAB_KUBE_REBUILD=1) delete the cache, build all from nothing
#   bash lab/kube/build.sh etcd kwok    only these (etcd, kube-apiserver, kwok)
#   bash lab/kube/build.sh --stamps     print what each binary must be built from today (NAME, its
#                                       stamp, the Go toolchain) and build nothing
# Idempotent: a binary whose stamp ($LAB_KUBE_CACHE/stamp/NAME) names today's pinned version and recipe
# is kept. Each build runs in a throw-away module under $LAB_KUBE_CACHE/src/NAME, with a GOCACHE
# the builds of one run share (empty at its start, deleted at its end: the cache keeps binaries
# only), niced (LAB_KUBE_NICE, default 10),
# and writes the binary to bin/NAME.new, renamed over bin/NAME only when the build succeeded.
# Build times go to stdout and to $LAB_KUBE_CACHE/build-times.log (one line a build).
set -euo pipefail
KUBE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$KUBE_DIR/versions.sh"
T0=$(date +%s)
say() { echo "[kube-build +$(( $(date +%s) - T0 ))s] $*"; }
die() { echo "lab/kube/build.sh: $*" >&2; exit 1; }
# the Go toolchain's usual home (lab/lib/common.sh's PATH leaves it out)
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) [ -x /usr/local/go/bin/go ] && PATH=/usr/local/go/bin:$PATH ;; esac
command -v go >/dev/null || die "go not on PATH (nor in /usr/local/go/bin)"

rebuild=${LAB_KUBE_REBUILD:-0}
stamps=0
want=()
for a in "$@"; do
  case $a in
    --rebuild) rebuild=1 ;;
    --stamps) stamps=1 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    etcd|kube-apiserver|kwok) want+=("$a") ;;
    *) die "unknown argument '$a' (want --rebuild, etcd, kube-apiserver, kwok)" ;;
  esac
done
[ ${#want[@]} -gt 0 ] || want=(etcd kube-apiserver kwok)

# stamp_of NAME: what a cached binary must have been built from to be kept — the pinned
# version and the recipe: a hash of the functions that write its module and build it (this
# file's src_NAME, newmod, build_one). A change to either rebuilds that binary from nothing,
# so the cache only ever holds binaries that the recipe in this tree built (a stamp is written
# only after its build succeeded): CI, which takes the binaries from the cache, runs what
# today's build.sh produces, and a recipe that does not build cannot stay green unnoticed.
stamp_of() {
  local v fn=src_${1//-/_}
  case $1 in
    etcd) v="$KUBE_ETCD_MODULE@$KUBE_ETCD_VERSION" ;;
    kube-apiserver) v="$KUBE_K8S_MODULE@$KUBE_K8S_VERSION staging@$KUBE_STAGING_VERSION" ;;
    kwok) v="$KUBE_KWOK_MODULE@$KUBE_KWOK_VERSION" ;;
    *) die "stamp_of: unknown binary $1" ;;
  esac
  echo "$v recipe $(declare -f "$fn" newmod build_one | sha256sum | cut -c1-12)"
}

# newmod NAME: a fresh module directory for NAME; prints its path.
newmod() {
  local d=$LAB_KUBE_CACHE/src/$1
  rm -rf "$d"; mkdir -p "$d"
  (cd "$d" && go mod init "asap2lab.invalid/kube/$1" >/dev/null 2>&1)
  echo "$d"
}

src_etcd() {
  local d; d=$(newmod etcd)
  cat >"$d/main.go" <<'GO'
// etcd for the asap2lab Kubernetes control plane: etcd's own entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$d" && go get "$KUBE_ETCD_MODULE@$KUBE_ETCD_VERSION" && go mod tidy) >&2
  echo "$d"
}

src_kube_apiserver() {
  local d; d=$(newmod kube-apiserver)
  cat >"$d/main.go" <<'GO'
// kube-apiserver for the asap2lab Kubernetes control plane: the upstream command.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
GO
  # k8s.io/kubernetes' go.mod replaces every staging module with ./staging/src/k8s.io/NAME;
  # take the list from that very go.mod so a version bump needs no hand-kept list.
  (cd "$d" && go mod edit -require="$KUBE_K8S_MODULE@$KUBE_K8S_VERSION")
  local gomod
  gomod=$(cd "$d" && go mod download -json "$KUBE_K8S_MODULE@$KUBE_K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -r "$gomod" ] || die "no go.mod of $KUBE_K8S_MODULE@$KUBE_K8S_VERSION (go mod download gave '$gomod')"
  local staging
  staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// {print $1}' "$gomod" | sort -u)
  [ -n "$staging" ] || die "$gomod: no '=> ./staging/src/...' replace lines"
  local n=0 m
  for m in $staging; do
    (cd "$d" && go mod edit -replace="$m=$m@$KUBE_STAGING_VERSION")
    n=$((n + 1))
  done
  say "kube-apiserver: $n staging modules replaced by $KUBE_STAGING_VERSION (from $gomod)" >&2
  (cd "$d" && go mod tidy) >&2
  echo "$d"
}

# kwok's exec answers a command's non-zero exit as an error of its own (it wraps os/exec's
# ExitError, which the kubelet streaming server it uses does not recognise), so the API server
# reports "Internal error occurred: error executing command in container: cmd wait: ... exit
# status 1" instead of the exit code, and a client cannot tell "exit 1" from a broken stream.
# The lab builds kwok's own command from a vendor directory (go mod vendor: the modules as the
# proxy serves them) with one file changed: an exit status is passed on as k8s.io/utils/exec's
# CodeExitError, which the streaming server sends as the NonZeroExitCode status kubelets send.
# (go build -overlay would be neater, but it refuses to replace files in the module cache.)
src_kwok() {
  local d; d=$(newmod kwok)
  cat >"$d/tools.go" <<'GO'
//go:build tools

// kwok's command, built from this module's vendor directory (lab/kube/build.sh).
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
GO
  (cd "$d" && go get "$KUBE_KWOK_MODULE@$KUBE_KWOK_VERSION" && go mod tidy) >&2
  (cd "$d" && go mod vendor) >&2
  local f=$d/vendor/$KUBE_KWOK_MODULE/pkg/kwok/server/debugging_exec.go
  [ -r "$f" ] || die "$f missing after go mod vendor"
  python3 - "$f" "$f" <<'PY' || die "patching $f failed"
import sys
src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
old = """	err := utilsexec.Exec(ctx, cmd[0], cmd[1:]...)
	if err != nil {
		return err
	}
	return nil
}"""
new = """	err := utilsexec.Exec(ctx, cmd[0], cmd[1:]...)
	var exitErr *osexec.ExitError
	if errors.As(err, &exitErr) && exitErr.Exited() {
		// asap2lab: the exit status as the streaming server knows it (lab/kube/build.sh)
		return k8sexec.CodeExitError{Err: err, Code: exitErr.ExitCode()}
	}
	return err
}"""
if s.count(old) != 1:
    sys.exit("%s: the execInContainer ending this patch expects is not there once" % src)
s = s.replace(old, new)
s = s.replace("import (\n", "import (\n\t\"errors\"\n\tosexec \"os/exec\"\n\n\tk8sexec \"k8s.io/utils/exec\"\n", 1)
open(dst, "w").write(s)
PY
  echo "$d"
}

build_one() {
  local name=$1 t d bin=$LAB_KUBE_CACHE/bin/$1 st
  st=$(stamp_of "$name")
  if [ -x "$bin" ] && [ "$(cat "$LAB_KUBE_CACHE/stamp/$name" 2>/dev/null)" = "$st" ]; then
    say "$name: $bin is built from $st ($(du -h "$bin" | cut -f1)); nothing to do"
    return 0
  fi
  t=$(date +%s)
  export GOCACHE=$GOCACHE_SHARED GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
  case $name in
    etcd)
      d=$(src_etcd | tail -1)
      (cd "$d" && nice -n "$NICE" go build -trimpath -ldflags='-s -w' -o "$bin.new" .) ;;
    kube-apiserver)
      d=$(src_kube_apiserver | tail -1)
      local v=${KUBE_K8S_VERSION#v} pkg=k8s.io/component-base/version
      local ld="-s -w -X $pkg.gitVersion=$KUBE_K8S_VERSION -X $pkg.gitMajor=${v%%.*} -X $pkg.gitMinor=$(echo "$v" | cut -d. -f2) -X $pkg.gitTreeState=clean"
      (cd "$d" && nice -n "$NICE" go build -trimpath -ldflags="$ld" -o "$bin.new" .) ;;
    kwok)
      d=$(src_kwok | tail -1)
      (cd "$d" && nice -n "$NICE" go build -mod=vendor -trimpath -ldflags='-s -w' -o "$bin.new" "$KUBE_KWOK_MODULE/cmd/kwok") ;;
  esac
  mv "$bin.new" "$bin"
  echo "$st" >"$LAB_KUBE_CACHE/stamp/$name"
  rm -rf "$LAB_KUBE_CACHE/src/$name/vendor"
  local secs=$(( $(date +%s) - t ))
  local line
  line="$(date -u +%FT%TZ) $name $st built in ${secs}s ($(( secs / 60 ))m$(( secs % 60 ))s), $(du -h "$bin" | cut -f1), nice $NICE, $(nproc) cores, $(go env GOVERSION)"
  echo "$line" >>"$LAB_KUBE_CACHE/build-times.log"
  say "$line"
}

# kwok's stages (node/fast, node/heartbeat, pod/fast of its kustomize/stage) from the pinned
# module: lab/kube/up.sh gives them to each kwok.
kwok_stages() {
  local d=$LAB_KUBE_CACHE/kwok-stages st
  st=$(stamp_of kwok)
  [ -d "$d" ] && [ "$(cat "$LAB_KUBE_CACHE/stamp/kwok-stages" 2>/dev/null)" = "$st" ] && return 0
  local src
  src=$(cd "$LAB_KUBE_CACHE/src" && GOFLAGS= go mod download -json "$KUBE_KWOK_MODULE@$KUBE_KWOK_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -d "$src/kustomize/stage" ] || die "no kustomize/stage in $KUBE_KWOK_MODULE@$KUBE_KWOK_VERSION (module dir '$src')"
  rm -rf "$d.new"; mkdir -p "$d.new"
  local f
  for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    [ -s "$src/kustomize/stage/$f" ] || die "$KUBE_KWOK_MODULE@$KUBE_KWOK_VERSION: no kustomize/stage/$f"
    cp "$src/kustomize/stage/$f" "$d.new/$(echo "$f" | tr / -)"
  done
  rm -rf "$d"; mv "$d.new" "$d"
  echo "$st" >"$LAB_KUBE_CACHE/stamp/kwok-stages"
  say "kwok stages: $(ls "$d" | tr '\n' ' ')"
}

if [ "$stamps" = 1 ]; then
  gov=$(go env GOVERSION)
  for n in "${want[@]}"; do echo "$n $(stamp_of "$n") $gov"; done
  exit 0
fi
[ "$rebuild" = 1 ] && { say "rebuild from nothing: rm -rf $LAB_KUBE_CACHE"; rm -rf "$LAB_KUBE_CACHE"; }
mkdir -p "$LAB_KUBE_CACHE"/{bin,stamp,src}
NICE=${LAB_KUBE_NICE:-10}
# One build cache for the binaries this run builds, empty at its start and deleted at its end: what
# they have in common (the standard library, the modules at the same version) compiles once. Each
# binary had a cache of its own before: the standard library compiled three times from nothing.
GOCACHE_SHARED=$LAB_KUBE_CACHE/src/gocache
rm -rf "$GOCACHE_SHARED"; mkdir -p "$GOCACHE_SHARED"
trap 'rm -rf "$GOCACHE_SHARED"' EXIT

for n in "${want[@]}"; do
  build_one "$n"
  if [ "$n" = kwok ]; then kwok_stages; fi
done
say "cache $LAB_KUBE_CACHE: $(du -sh "$LAB_KUBE_CACHE" | cut -f1) ($(du -sh "$LAB_KUBE_CACHE/bin" | cut -f1) binaries)"
