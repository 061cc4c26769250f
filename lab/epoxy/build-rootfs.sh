#!/bin/bash
# Build the Debian 13 (trixie) root filesystem that LAB_RELEASE=epoxy runs OpenStack 2025.1 "Epoxy"
# from (chroot, see lab/epoxy/rootfs-exec), with mmdebstrap from Debian's package source, pinned
# to lab/epoxy/rootfs.lock. The host's own packages are not touched (mmdebstrap and its apt run
# with their own state inside the new root).
#   bash lab/epoxy/build-rootfs.sh           build / verify ($LAB_ROOTFS)
#   bash lab/epoxy/build-rootfs.sh --relock  rewrite rootfs.lock with today's trixie candidates
# Idempotent: when $LAB_ROOTFS/.asap2lab-lock holds a copy of rootfs.lock identical to today's,
# it only says so. Otherwise it builds into $LAB_ROOTFS.new and renames it over the old root only
# when the build succeeded, so an interrupted build leaves the previous root usable.
# Where: $LAB_ROOTFS defaults to /var/cache/asap2lab/rootfs-epoxy, OUTSIDE $LAB_STATE, because
# lab/down.sh deletes $LAB_STATE and the root is a build product of the lock file (like the
# host's installed packages), not lab state: rebuilding it costs minutes on every lab-up.
set -euo pipefail
EPOXY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_DIR=$(cd "$EPOXY_DIR/.." && pwd)
source "$LAB_DIR/releases/epoxy.sh"
LOCK=$EPOXY_DIR/rootfs.lock
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
T0=$(date +%s)
say() { echo "[build-rootfs +$(( $(date +%s) - T0 ))s] $*"; }
die() { echo "build-rootfs.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
[ -r "$LOCK" ] || die "lock file $LOCK not readable"
command -v mmdebstrap >/dev/null || die "mmdebstrap missing: bash lab/install.sh (lab/packages.lock pins it)"

pins=() extracts=()
while read -r a b c; do
  case "$a" in ''|'#'*) continue ;; esac
  if [ "$a" = extract ]; then
    [ -n "$b" ] && [ -n "$c" ] || die "$LOCK: malformed extract line: extract $b $c"
    extracts+=("$b $c")
  else
    [[ "$a" == *=* ]] || die "$LOCK: malformed line '$a' (want PKG=VERSION)"
    pins+=("$a")
  fi
done <"$LOCK"

if [ "${1:-}" = --relock ]; then
  # A private apt state (lists, cache, sources) so the host's apt never sees trixie.
  apt_dir=$(mktemp -d /tmp/asap2lab-relock.XXXXXX); trap 'rm -rf "$apt_dir"' EXIT
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  printf 'deb %s\n' "${EPOXY_SOURCES[@]}" >"$apt_dir/sources.list"
  O=(-o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists" -o Dir::State::status=/dev/null
     -o "Dir::Cache=$apt_dir/cache" -o "Dir::Etc::SourceList=$apt_dir/sources.list"
     -o Dir::Etc::SourceParts=/nonexistent -o APT::Sandbox::User=root)
  apt-get "${O[@]}" update -q >/dev/null
  cand() { apt-cache "${O[@]}" policy "$1" | awk '/Candidate:/{print $2}'; }
  tmp=$(mktemp "$LOCK.XXXX")
  while IFS= read -r line; do
    set -- $line
    case "${1:-}" in
      ''|'#'*) echo "$line" ;;
      extract) v=$(cand "${2%%=*}"); [ -n "$v" ] && [ "$v" != "(none)" ] || { rm -f "$tmp"; die "no candidate for ${2%%=*}"; }
               echo "extract ${2%%=*}=$v $3" ;;
      *) v=$(cand "${1%%=*}"); [ -n "$v" ] && [ "$v" != "(none)" ] || { rm -f "$tmp"; die "no candidate for ${1%%=*}"; }
         echo "${1%%=*}=$v" ;;
    esac
  done <"$LOCK" >"$tmp"
  mv "$tmp" "$LOCK"; say "rewrote $LOCK"; exit 0
fi

stamp=$LAB_ROOTFS/.asap2lab-lock
if [ -d "$LAB_ROOTFS" ] && cmp -s "$LOCK" "$stamp"; then
  say "$LAB_ROOTFS is built from today's $LOCK ($(du -sh --one-file-system "$LAB_ROOTFS" | cut -f1)); nothing to do"
  exit 0
fi

new=$LAB_ROOTFS.new
rm -rf "$new"; mkdir -p "$(dirname "$LAB_ROOTFS")"
log=$(dirname "$LAB_ROOTFS")/$(basename "$LAB_ROOTFS")-build.log
say "mmdebstrap $EPOXY_SUITE -> $new (${#pins[@]} pinned packages, ${#extracts[@]} paste files; log $log)"
# The customize hook runs inside the new root while its apt lists still exist: download the
# -common packages whose api-paste.ini files the lab needs, extract only those files.
hook='set -e; d=$(mktemp -d); chown _apt "$d"; cd "$d"'
for e in "${extracts[@]}"; do
  set -- $e
  out=/usr/local/share/asap2lab/paste/${1%%=*}/$(basename "$2")
  hook+="; apt-get download -q '$1' >/dev/null; mkdir -p '$(dirname "$out")'"
  hook+="; dpkg-deb --fsys-tarfile ${1%%=*}_*.deb | tar -xO './$2' > '$out'; test -s '$out'"
done
hook+='; cd /; rm -rf "$d"'
# mmdebstrap installs a policy-rc.d while it runs: no maintainer script starts mariadb, rabbitmq,
# sshd or OVS. Its "root" mode chroots; nothing of the host's dpkg/apt state is read or written.
if ! mmdebstrap --mode=root --variant=apt --format=directory \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --include="$(IFS=,; echo "${pins[*]}")" \
    --customize-hook="chroot \"\$1\" sh -c '${hook//\'/\'\\\'\'}'" \
    "$EPOXY_SUITE" "$new" "${EPOXY_SOURCES[@]/#/deb }" >"$log" 2>&1; then
  tail -20 "$log" >&2; rm -rf "$new"; die "mmdebstrap failed (log $log)"
fi
# every pin installed at exactly its version
bad=$(for pv in "${pins[@]}"; do
  v=$(chroot "$new" dpkg-query -W -f='${Version}' "${pv%%=*}" 2>/dev/null || true)
  [ "$v" = "${pv#*=}" ] || echo "${pv%%=*}: installed '$v', pinned '${pv#*=}'"
done)
[ -z "$bad" ] || { echo "$bad" >&2; rm -rf "$new"; die "pins not honoured"; }
cp "$LOCK" "$new/.asap2lab-lock"
rm -rf "$LAB_ROOTFS.old"; [ -d "$LAB_ROOTFS" ] && mv "$LAB_ROOTFS" "$LAB_ROOTFS.old"
mv "$new" "$LAB_ROOTFS"; rm -rf "$LAB_ROOTFS.old"
say "built $LAB_ROOTFS in $(( $(date +%s) - T0 ))s: $(du -sh --one-file-system "$LAB_ROOTFS" | cut -f1), $(chroot "$LAB_ROOTFS" dpkg-query -W -f='.\n' | wc -l) packages"
