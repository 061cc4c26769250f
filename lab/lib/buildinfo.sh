# harness_ldflags ROOT: the harness commit the runs of a lab job record (environment.harness,
# e2e/buildinfo). The suites run as test binaries, which carry no VCS stamp, so the commit is given
# at link time, one -X with no space in it (a dirty tree's as "<commit>+modified"): HARNESS_LDFLAGS
# for ginkgo's --ldflags (ginkgo passes its own -ldflags "-w -s" otherwise, which wins over GOFLAGS),
# GOFLAGS for go test -c. Both exported; kept when HARNESS_LDFLAGS is set already (an outer job's).
# Outside a git checkout nothing is set and the runs say "unknown". (lab/job.sh, suites/faults/run.sh)
harness_ldflags() {
  local rev
  [ -z "${HARNESS_LDFLAGS:-}" ] || return 0
  rev=$(git -C "$1" rev-parse HEAD 2>/dev/null) || return 0
  [ -z "$(git -C "$1" status --porcelain 2>/dev/null)" ] || rev+=+modified
  export HARNESS_LDFLAGS="-X=github.com/mosk-qa/asap2-e2e/e2e/buildinfo.Revision=$rev"
  export GOFLAGS="${GOFLAGS:+$GOFLAGS }-ldflags=$HARNESS_LDFLAGS"
}
