#!/bin/bash
# CI's proof of the fresh-machine path of lab/install.sh (see .ci/run):
#   bash lab/ci-fresh-path.sh PKG...
# purges each PKG (which must be pinned in lab/packages.lock), runs lab/install.sh, and
# fails unless install.sh reported installing them and each is installed again at its
# pinned version. Refuses a package whose purge would take anything else with it.
set -euo pipefail
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOCK=$LAB_DIR/packages.lock
export DEBIAN_FRONTEND=noninteractive
die() { echo "ci-fresh-path.sh: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: ci-fresh-path.sh PKG..."
[ "$(id -u)" = 0 ] || die "must run as root"

declare -A pin=()
for p in "$@"; do
  v=$(awk -v p="$p" -F= '$1 == p {sub(/^[^=]*=/, ""); print; exit}' "$LOCK")
  [ -n "$v" ] || die "$p is not pinned in $LOCK"
  pin[$p]=$v
done
version() { dpkg-query -W -f='${db:Status-Status} ${Version}' "$1" 2>/dev/null | awk '$1=="installed"{print $2}' || true; }

# What apt would remove: exactly the named packages, nothing that depends on them.
removing=$(apt-get -s purge "$@" 2>/dev/null | awk '/^Purg /{print $2}' | sort | tr '\n' ' ')
want=$(for p in "$@"; do [ -n "$(version "$p")" ] && echo "$p"; done | sort | tr '\n' ' ')
[ "$removing" = "$want" ] || die "purging '$*' would remove [$removing], not just [$want]: pick packages nothing depends on"

T0=$(date +%s)
echo "[fresh-path] purging: $*"
apt-get purge -y -q -o DPkg::Lock::Timeout=900 "$@" >/dev/null
for p in "$@"; do [ -z "$(version "$p")" ] || die "$p is still installed after the purge"; done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
bash "$LAB_DIR/install.sh" 2>&1 | tee "$log"
for p in "$@"; do
  grep "pinned packages: " "$log" | grep -qF " $p=${pin[$p]}" || die "install.sh did not say it installed $p=${pin[$p]}"
  got=$(version "$p")
  [ "$got" = "${pin[$p]}" ] || die "$p: installed '$got' after install.sh, pinned '${pin[$p]}'"
  echo "[fresh-path] $p back at its pinned version $got"
done
echo "[fresh-path] purge + reinstall of $# pinned packages in $(( $(date +%s) - T0 ))s"
