# harness_ldflags ROOT: the harness commit the runs of a lab job record (environment.harness,
# e2e/buildinfo). The suites run as test binaries, which carry no VCS stamp, so the commit is given
# at link time, one -X with no space in it (a dirty tree's as "<commit>+modified"): HARNESS_LDFLAGS
# for ginkgo's --ldflags (ginkgo passes its own -ldflags "-w -s" otherwise, which wins over GOFLAGS),
# GOFLAGS for go test -c. Both exported; kept when HARNESS_LDFLAGS is set already (an outer job's).
# Outside a git checkout nothing is set and the runs say "unknown". (lab/job.sh, suites/faults/run.sh)
harness_ldflags() {
  local rev
  export CGO_ENABLED=0 # the Makefile's, make dist's: one build configuration (below)
  [ -z "${HARNESS_LDFLAGS:-}" ] || return 0
  rev=$(git -C "$1" rev-parse HEAD 2>/dev/null) || return 0
  [ -z "$(git -C "$1" status --porcelain 2>/dev/null)" ] || rev+=+modified
  export HARNESS_LDFLAGS="-X=github.com/mosk-qa/asap2-e2e/e2e/buildinfo.Revision=$rev"
  export GOFLAGS="${GOFLAGS:+$GOFLAGS }-ldflags=$HARNESS_LDFLAGS"
  # make test's and make dist's build configuration (the Makefile's GOFLAGS and CGO_ENABLED), so a
  # lab job run without make finds their compiled packages in the build cache too.
  case " $GOFLAGS " in *" -trimpath "*) ;; *) GOFLAGS+=" -trimpath" ;; esac
}

# harness_version ROOT: the harness's version, printed: the Go pseudo-version of the checkout's
# commit, v0.0.0-<commit time, UTC, yyyymmddhhmmss>-<12 hex of the commit>, with "-modified" after
# it for a dirty tree (no "+": an image tag may not hold one). make dist records it in every binary
# (buildinfo.Version) and in dist/VERSION, and tools/image tags the image with it. Nothing outside a
# git checkout. (tools/dist.sh)
harness_version() {
  local rev when v
  rev=$(git -C "$1" rev-parse HEAD 2>/dev/null) || return 0
  when=$(TZ=UTC git -C "$1" show -s --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD) || return 0
  v="v0.0.0-$when-${rev:0:12}"
  [ -z "$(git -C "$1" status --porcelain 2>/dev/null)" ] || v+=-modified
  echo "$v"
}
