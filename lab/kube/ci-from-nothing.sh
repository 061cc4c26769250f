#!/bin/bash
# The Kubernetes binaries' newcomer path, in CI, without costing CI's budget.
#   bash lab/kube/ci-from-nothing.sh start DIR   build etcd, kube-apiserver and kwok from nothing into
#                                                DIR (lab/kube/build.sh --rebuild with LAB_KUBE_CACHE=DIR/cache
#                                                and an empty GOMODCACHE=DIR/gomod: every module fetched
#                                                from the proxy, every package compiled), in the
#                                                background under SCHED_IDLE; prints nothing else
#   bash lab/kube/ci-from-nothing.sh adopting DIR  exit 0 (saying why) when adopt will take that build as the cache
#                                                ($LAB_KUBE_CACHE lacks a binary or holds one today's recipe
#                                                would build again): the lab then waits for it, and .ci/run
#                                                holds its other background jobs until it is done; exit 1
#                                                when the cache is full and current
#   bash lab/kube/ci-from-nothing.sh check DIR   wait for that build, then require each binary and the kwok
#                                                stages to be byte-identical to $LAB_KUBE_CACHE's, the
#                                                ones the lab ran; exit 1 naming each that differs or
#                                                a build that failed (its log's tail)
#   bash lab/kube/ci-from-nothing.sh adopt DIR   on a machine with no cache ($LAB_KUBE_CACHE lacks a binary, or holds
#                                                one that today's recipe would build again):
#                                                wait for that build (at normal priority) and copy its binaries,
#                                                stamps and kwok stages into $LAB_KUBE_CACHE, so a fresh
#                                                machine builds them once, not twice; with a full cache it
#                                                only says so. check then has nothing to compare and says that
#   bash lab/kube/ci-from-nothing.sh proven DIR  exit 0 when $LAB_KUBE_CACHE/proof says a build from nothing
#                                                of today's recipe with today's Go toolchain produced exactly
#                                                the cached binaries and stages, less than LAB_KUBE_PROOF_DAYS
#                                                (default 7) days ago: CI then skips start and check; exit 1
#                                                (saying why) when it must build from nothing again
#   bash lab/kube/ci-from-nothing.sh stop DIR    end the build if it still runs (its process group)
#
# The proof: check writes it after the byte-identity passed, adopt after it filled an empty cache
# (the cache is then the build from nothing itself). One line a binary, "NAME STAMP GOVERSION
# sha256:HASH", one for the kwok stages, and "proved EPOCH DATE HOW". lab/kube/build.sh --rebuild
# removes it with the cache; a new recipe, a new toolchain or another binary no longer matches it.
# Why not prove it on every run: the build from nothing is about 15 minutes of both cores, and
# beside the lab jobs (under SCHED_IDLE it still takes the caches, the disk and the memory bus) it
# slowed them by minutes, to re-prove what the recipe and the toolchain already pin. What it still
# proves when it runs (the proxy serves every module of the recipe, a toolchain builds it the same)
# can change without a commit, so the proof ages out after a week.
#
# Why: building from nothing costs about 15 minutes of this machine's two cores (build-times.log),
# which CI's 90 minutes cannot hold in the foreground beside three lab jobs. A SCHED_IDLE build
# only takes cycles nothing else wants: beside an Epoxy lab job on 2026-12-04 it finished in 919 s
# (etcd 88 s, kube-apiserver 590 s, kwok 241 s) while the job's phases took what they take alone.
# The builds are reproducible (-trimpath, CGO off, pinned modules, one toolchain): that build's
# three binaries were byte-identical to the cache's. So the check proves that what the lab ran is
# exactly what this tree's recipe builds from nothing today; a difference (a changed toolchain, a
# module the proxy serves differently, a cache built by an older recipe) fails CI with the fix.
set -euo pipefail
KUBE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$KUBE_DIR/versions.sh"
die() { echo "lab/kube/ci-from-nothing.sh: $*" >&2; exit 1; }
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: ci-from-nothing.sh start|proven|adopting|adopt|check|stop DIR"
log=$dir/build.log pidf=$dir/build.pid rcf=$dir/build.rc

# wait_build: wait for the background build (its priority back to normal: what waits for it
# wants the cores) and require it to have succeeded.
wait_build() {
  [ -r "$pidf" ] || die "$dir: no build was started (ci-from-nothing.sh start $dir)"
  local pid t p rc
  pid=$(cat "$pidf") t=$(date +%s)
  if [ ! -e "$rcf" ]; then
    echo "waiting for the build from nothing (pid $pid) ..."
    "$KUBE_DIR/../lib/idle-session" --normal "$pid"
    while [ ! -e "$rcf" ]; do
      kill -0 "$pid" 2>/dev/null || [ -e "$rcf" ] || die "the build (pid $pid) ended without a status; $log: $(tail -n 5 "$log" 2>/dev/null)"
      sleep 2
    done
    echo "waited $(( $(date +%s) - t ))s for it"
  fi
  rc=$(cat "$rcf")
  grep -E '^\[kube-build [^]]*\] ([0-9TZ:-]+ [a-z-]+ .* built in |cache )' "$log" || true
  [ "$rc" = 0 ] || die "lab/kube/build.sh --rebuild failed (exit $rc); the end of $log:
$(tail -n 20 "$log")"
}

# cache_full: $LAB_KUBE_CACHE holds all three binaries with their stamps.
cache_full() {
  local b
  for b in etcd kube-apiserver kwok; do [ -x "$LAB_KUBE_CACHE/bin/$b" ] && [ -s "$LAB_KUBE_CACHE/stamp/$b" ] || return 1; done
}
# cache_stale: the cache's binaries that today's recipe would build again (lab/kube/build.sh keeps a
# binary only when its stamp names today's: build.sh --stamps, less the toolchain at the end), one
# "NAME: cached STAMP, today's STAMP" a line; nothing when every binary is current.
cache_stale() {
  local b st
  LAB_KUBE_CACHE=$LAB_KUBE_CACHE bash "$KUBE_DIR/build.sh" --stamps | while read -r b st; do
    st=${st% *}
    [ "$(cat "$LAB_KUBE_CACHE/stamp/$b" 2>/dev/null)" = "$st" ] ||
      echo "$b: cached '$(cat "$LAB_KUBE_CACHE/stamp/$b" 2>/dev/null)', today's recipe '$st'"
  done
}

# cache_current: the cache holds all three binaries and each is today's recipe's (adopt keeps it; a
# build from nothing is compared with it); otherwise adopt replaces it with that build. Sets $stale
# (cache_stale's lines).
cache_current() { stale=$(cache_stale); cache_full && [ -z "$stale" ]; }

# proof_now: the proof lines for today's recipe and toolchain and the cache's binaries (no "proved").
proof_now() {
  local b
  LAB_KUBE_CACHE=$LAB_KUBE_CACHE bash "$KUBE_DIR/build.sh" --stamps | while read -r b rest; do
    [ -x "$LAB_KUBE_CACHE/bin/$b" ] || { echo "$b missing"; continue; }
    echo "$b $rest sha256:$(sha256sum "$LAB_KUBE_CACHE/bin/$b" | cut -c1-64)"
  done
  echo "kwok-stages sha256:$(cd "$LAB_KUBE_CACHE/kwok-stages" 2>/dev/null && sha256sum -- * | sha256sum | cut -c1-64)"
}
# write_proof HOW: record that the cache's binaries are what a build from nothing made today.
write_proof() {
  { proof_now; echo "proved $(date +%s) $(date -u +%FT%TZ) $1"; } >"$LAB_KUBE_CACHE/proof.new"
  mv "$LAB_KUBE_CACHE/proof.new" "$LAB_KUBE_CACHE/proof"
}
PROOF_DAYS=${LAB_KUBE_PROOF_DAYS:-7}

case $cmd in
  proven)
    proof=$LAB_KUBE_CACHE/proof
    cache_full || { echo "the build from nothing must run: $LAB_KUBE_CACHE lacks a binary"; exit 1; }
    [ -r "$proof" ] || { echo "the build from nothing must run: $proof is missing (no build from nothing was compared with this cache yet)"; exit 1; }
    read -r _ when date how < <(grep '^proved ' "$proof") || { echo "the build from nothing must run: $proof has no 'proved' line"; exit 1; }
    if ! diff <(grep -v '^proved ' "$proof") <(proof_now) >/dev/null; then
      echo "the build from nothing must run: the cache, the recipe or the Go toolchain changed since $proof was written ($date):"
      diff <(grep -v '^proved ' "$proof") <(proof_now) | grep '^[<>]' | sed 's/^</  proved:/; s/^>/  today: /'
      exit 1
    fi
    age=$(( ($(date +%s) - when) / 86400 ))
    [ "$age" -lt "$PROOF_DAYS" ] || { echo "the build from nothing must run: its proof of $date is $age days old (LAB_KUBE_PROOF_DAYS=$PROOF_DAYS)"; exit 1; }
    # An adopted build became the cache: nothing was compared with it (the next proof compares).
    case $how in
      adopted*) what="were built from nothing and became the cache" ;;
      *) what="were built from nothing and matched the cache byte for byte" ;;
    esac
    echo "the Kubernetes binaries of this recipe and toolchain $what on $date ($how, $age of $PROOF_DAYS days): not built again"
    ;;
  start)
    [ ! -e "$pidf" ] || die "$dir: a build was started there already (pid $(cat "$pidf"))"
    mkdir -p "$dir"
    # setsid: its own process group, so stop ends the whole build (go, compile, link) by one id.
    # Autogroup nice 10, not idle-session's 19: of CI's longer background work it is needed first
    # (Zed's Kubernetes phases, 40 minutes in), so it takes most of the idle cycles (weight 110
    # against 36 for the Epoxy root and 15 for make test, race and fuzzing each; only the module's
    # compile, needed in Zed's first minutes, comes before it at 5), and still about a tenth of a
    # core when the lab wants both. The CPU it used ends its log.
    LAB_KUBE_CACHE=$dir/cache GOMODCACHE=$dir/gomod GOFLAGS=-modcacherw LAB_KUBE_REBUILD=1 \
      setsid "$KUBE_DIR/../lib/idle-session" --nice 10 bash -c 'bash "$1/build.sh" --rebuild >"$2" 2>&1; rc=$?
        times >"$2.times" # not in $(...): a subshell'"'"'s times count none of this shell'"'"'s children
        echo "CPU of the build from nothing (user, system; bash times): $(sed -n 2p "$2.times")" >>"$2"; echo $rc >"$3"' _ "$KUBE_DIR" "$log" "$rcf" \
      </dev/null &
    echo $! >"$pidf"
    echo "Kubernetes binaries from nothing: building in the background (lab/lib/idle-session: SCHED_IDLE, autogroup nice 10; pid $!, log $log)"
    ;;
  stop)
    [ -r "$pidf" ] || exit 0
    pid=$(cat "$pidf")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || true
      for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    ;;
  adopting)
    ! cache_current || exit 1
    if cache_full; then
      printf 'the build from nothing will become the cache (today'"'"'s recipe builds again):\n%s\n' "$stale"
    else
      echo "the build from nothing will become the cache: $LAB_KUBE_CACHE lacks a binary"
    fi
    ;;
  adopt)
    # A cache from an older recipe (a commit changed build.sh or versions.sh) is no cache: build.sh
    # would build each stale binary again, in the job's foreground, beside the build from nothing.
    if cache_current; then
      echo "$LAB_KUBE_CACHE holds all three binaries of today's recipe: the lab takes them from there, and check compares the build from nothing with them"
      exit 0
    fi
    [ -z "$stale" ] || ! cache_full || printf 'the cache is from another recipe, the build from nothing replaces it:\n%s\n' "$stale"
    wait_build
    grep '^CPU of the build from nothing' "$log" || true
    mkdir -p "$LAB_KUBE_CACHE"
    rm -rf "$LAB_KUBE_CACHE/bin" "$LAB_KUBE_CACHE/stamp" "$LAB_KUBE_CACHE/kwok-stages"
    cp -a "$dir/cache/bin" "$dir/cache/stamp" "$LAB_KUBE_CACHE/"
    [ -d "$dir/cache/kwok-stages" ] && cp -a "$dir/cache/kwok-stages" "$LAB_KUBE_CACHE/"
    [ -f "$dir/cache/build-times.log" ] && cat "$dir/cache/build-times.log" >>"$LAB_KUBE_CACHE/build-times.log"
    echo "adopted" >"$dir/adopted"
    write_proof "adopted: the cache was empty or stale and holds the build from nothing"
    echo "$LAB_KUBE_CACHE was empty or from another recipe: it now holds the binaries built from nothing by this run (built once, not twice)"
    ;;
  check)
    if [ -e "$dir/adopted" ]; then
      echo "the cache was empty or stale at the start of this run and holds the build from nothing itself: nothing to compare on this machine (the next run, with a cache, compares a new build from nothing with it)"
      exit 0
    fi
    wait_build
    grep '^CPU of the build from nothing' "$log" || true
    problems=()
    for b in etcd kube-apiserver kwok; do
      new=$dir/cache/bin/$b old=$LAB_KUBE_CACHE/bin/$b
      [ -x "$new" ] || { problems+=("$b: the build from nothing left no $new"); continue; }
      [ -x "$old" ] || { problems+=("$b: the lab ran no cached $old"); continue; }
      hn=$(sha256sum "$new" | cut -c1-16) ho=$(sha256sum "$old" | cut -c1-16)
      if [ "$hn" = "$ho" ]; then
        echo "ok: $b from nothing is byte-identical to the binary the lab ran ($hn, $(cat "$dir/cache/stamp/$b"))"
      else
        problems+=("$b: built from nothing $hn ($(cat "$dir/cache/stamp/$b" 2>/dev/null)) differs from the lab's $old $ho ($(cat "$LAB_KUBE_CACHE/stamp/$b" 2>/dev/null))")
      fi
    done
    if ! diff -r "$dir/cache/kwok-stages" "$LAB_KUBE_CACHE/kwok-stages" >/dev/null 2>&1; then
      problems+=("kwok stages: $dir/cache/kwok-stages differs from $LAB_KUBE_CACHE/kwok-stages")
    fi
    if [ ${#problems[@]} -gt 0 ]; then
      printf 'lab/kube/ci-from-nothing.sh: %s\n' "${problems[@]}" >&2
      echo "the lab ran Kubernetes binaries that this tree's recipe does not build today (a new Go toolchain? a cache from an older recipe?): bash lab/kube/build.sh --rebuild, then run CI again" >&2
      exit 1
    fi
    write_proof "built from nothing beside the lab, byte-identical to the cache"
    echo "proof written: $LAB_KUBE_CACHE/proof (the next runs within $PROOF_DAYS days skip this build while the recipe, the toolchain and the cache stay as they are)"
    ;;
  *) die "unknown command '$cmd' (start, proven, adopting, adopt, check, stop)" ;;
esac
