#!/bin/bash
# Install every Debian package the asap2lab needs, pinned to lab/packages.lock, without any prompt.
# Idempotent: when every pinned package is installed at its pinned version and the paste files are
# extracted, it only says so. Never starts a system-wide service (policy-rc.d guard while dpkg runs).
#   bash lab/install.sh           install / verify
#   bash lab/install.sh --relock  rewrite packages.lock with today's candidates (after apt-get update)
set -euo pipefail
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOCK=$LAB_DIR/packages.lock
LAB_SHARE=${LAB_SHARE:-/usr/local/share/asap2lab}
export DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
APT_OPTS=(-y -q --allow-downgrades -o DPkg::Lock::Timeout=900 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
T0=$(date +%s)
say() { echo "[install +$(( $(date +%s) - T0 ))s] $*"; }
die() { echo "install.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
[ -r "$LOCK" ] || die "lock file $LOCK not readable"

pins=()      # PKG=VERSION to install
extracts=()  # "PKG=VERSION PATH"
while read -r a b c; do
  case "$a" in ''|'#'*) continue ;; esac
  if [ "$a" = extract ]; then
    [ -n "$b" ] && [ -n "$c" ] || die "$LOCK: malformed extract line: extract $b $c"
    extracts+=("$b $c")
  else
    [[ "$a" == *=* ]] || die "$LOCK: malformed line '$a' (want PKG=VERSION)"
    pins+=("$a")
  fi
done < "$LOCK"

if [ "${1:-}" = --relock ]; then
  apt-get update -q -o DPkg::Lock::Timeout=900
  tmp=$(mktemp "$LOCK.XXXX")
  while IFS= read -r line; do
    set -- $line
    case "${1:-}" in
      ''|'#'*) echo "$line" ;;
      extract) p=${2%%=*}; v=$(apt-cache policy "$p" | awk '/Candidate:/{print $2}'); echo "extract $p=$v $3" ;;
      *) p=${1%%=*}; v=$(apt-cache policy "$p" | awk '/Candidate:/{print $2}')
         [ -n "$v" ] && [ "$v" != "(none)" ] || { rm -f "$tmp"; die "no candidate for $p"; }
         echo "$p=$v" ;;
    esac
  done < "$LOCK" > "$tmp"
  mv "$tmp" "$LOCK"; say "rewrote $LOCK"; exit 0
fi

installed_version() { dpkg-query -W -f='${db:Status-Status} ${Version}' "$1" 2>/dev/null | awk '$1=="installed"{print $2}'; }

# one dpkg-query for all: "PKG=VERSION" of every installed pinned package. dpkg-query exits 1
# when any of them is unknown to dpkg (the fresh machine's case): that is an answer, not an error.
have=" $( { dpkg-query -W -f='${db:Status-Status} ${Package}=${Version}\n' "${pins[@]%%=*}" 2>/dev/null || true; } |
  awk '$1 == "installed" {print $2}' | tr '\n' ' ') "
missing=()
for pv in "${pins[@]}"; do
  [[ "$have" == *" $pv "* ]] || missing+=("$pv")
done
need_extract=0
for e in "${extracts[@]}"; do
  set -- $e; [ -s "$LAB_SHARE/paste/${1%%=*}/$(basename "$2")" ] || need_extract=1
done

if [ ${#missing[@]} -eq 0 ] && [ $need_extract = 0 ]; then
  say "all ${#pins[@]} pinned packages present; paste files in $LAB_SHARE/paste/PKG/; nothing to do"
  exit 0
fi

say "apt-get update"
apt-get update -q -o DPkg::Lock::Timeout=900

if [ ${#missing[@]} -gt 0 ]; then
  # Debian's maintainer scripts would start mariadb, rabbitmq, sshd and a system-wide OVS.
  # The lab runs its own copies; a policy-rc.d that answers 101 (action forbidden) keeps them off.
  guard=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# asap2lab install.sh: keep package services stopped\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d; guard=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  say "installing ${#missing[@]} pinned packages: ${missing[*]}"
  apt-get install "${APT_OPTS[@]}" --no-install-recommends "${missing[@]}"
  if [ $guard = 1 ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
  for pv in "${missing[@]}"; do
    v=$(installed_version "${pv%%=*}")
    [ "$v" = "${pv#*=}" ] || die "${pv%%=*}: installed '$v', pinned '${pv#*=}'"
  done
fi

if [ $need_extract = 1 ]; then
  dl=$(mktemp -d /tmp/asap2lab-debs.XXXXXX)
  chown _apt "$dl" 2>/dev/null || true   # apt downloads as _apt when it can
  trap 'rm -rf "$dl"' EXIT
  for e in "${extracts[@]}"; do
    set -- $e
    say "extracting /$2 from $1"
    (cd "$dl" && apt-get download -q "$1" >/dev/null)
    deb=$(ls "$dl"/"${1%%=*}"_*.deb) || die "apt-get download $1 produced no .deb"
    out=$LAB_SHARE/paste/${1%%=*}/$(basename "$2"); mkdir -p "$(dirname "$out")"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$2" > "$out.tmp"
    [ -s "$out.tmp" ] || die "$deb has no ./$2"
    mv "$out.tmp" "$out"
  done
  rm -rf "$dl"; trap - EXIT
fi

# The lab starts its own per-hypervisor OVS; a system-wide one must not exist (it would own
# /run/openvswitch). With policy-rc.d in place the package never started it; say so if something did.
if [ -s /run/openvswitch/ovs-vswitchd.pid ] && kill -0 "$(cat /run/openvswitch/ovs-vswitchd.pid)" 2>/dev/null; then
  echo "install.sh: WARNING: a system-wide ovs-vswitchd (pid $(cat /run/openvswitch/ovs-vswitchd.pid)) is running; the lab does not use it" >&2
fi
say "done in $(( $(date +%s) - T0 ))s"
