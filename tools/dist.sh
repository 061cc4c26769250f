#!/usr/bin/env bash
# tools/dist.sh [DIR]: make dist. Builds into DIR (default dist/) what a run needs with no Go
# toolchain, no module cache and no network but the cloud's:
#
#   bin/asap2-e2e        the launcher (tools/asap2-e2e): runs a suite by name with a config and an
#                        output dir, or a tool by name
#   bin/<tool>           budget report history sweeper kubecheck evidence
#   suites/<suite>.test  smoke perf fleet: the suites' compiled test binaries (go test -c)
#   examples/            the annotated harness configs (e2e/config/examples)
#   VERSION              version, revision, modified, time, goos, goarch, go: what tools/image tags
#
# Every binary static (CGO_ENABLED=0: the SQLite driver is modernc.org's, pure Go; DNS and user
# lookups use Go's own resolvers), -trimpath, with the harness's commit and version given at link
# time (lab/lib/buildinfo.sh: harness_ldflags, harness_version), so the runs it makes record them.
# The same commit and toolchain give the same bytes. DIST_SUITES and DIST_TOOLS narrow what is
# built (tools/asap2-e2e's test builds a small one); GOOS/GOARCH cross-build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/dist}
suites=${DIST_SUITES-smoke perf fleet}
tools=${DIST_TOOLS-budget report history sweeper kubecheck evidence}
go=${GO:-go}

# shellcheck source=lab/lib/buildinfo.sh
. "$root/lab/lib/buildinfo.sh"
harness_ldflags "$root"
version=$(harness_version "$root")
rev=${HARNESS_LDFLAGS##*.Revision=}
pkg=github.com/mosk-qa/asap2-e2e/e2e/buildinfo
ldflags="-s -w ${HARNESS_LDFLAGS:-}${version:+ -X=$pkg.Version=$version}"

export CGO_ENABLED=0
GOOS=${GOOS:-linux} GOARCH=${GOARCH:-$($go env GOARCH)}
export GOOS GOARCH
tmp="$out.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/bin" "$tmp/suites" "$tmp/examples"
cd "$root"
# -ldflags here wins over the one harness_ldflags put in GOFLAGS (for go test -c in lab jobs).
build=(-trimpath -buildvcs=false "-ldflags=$ldflags")
pkgs=(./tools/asap2-e2e)
for t in $tools; do pkgs+=("./tools/$t"); done
"$go" build "${build[@]}" -o "$tmp/bin/" "${pkgs[@]}"
if [ -n "$suites" ]; then
  spkgs=()
  for s in $suites; do spkgs+=("./suites/$s"); done
  "$go" test -c "${build[@]}" -o "$tmp/suites/" "${spkgs[@]}"
fi
cp e2e/config/examples/*.yaml "$tmp/examples/"
{
  echo "version=${version:-unknown}"
  if [ -n "${HARNESS_LDFLAGS:-}" ]; then
    echo "revision=${rev%+modified}"
    [ "$rev" = "${rev%+modified}" ] && echo "modified=false" || echo "modified=true"
    echo "time=$(TZ=UTC git -C "$root" show -s --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)"
  else
    echo "revision=unknown"
    echo "modified=false"
    echo "time="
  fi
  echo "goos=$GOOS"
  echo "goarch=$GOARCH"
  echo "go=$("$go" env GOVERSION)"
} >"$tmp/VERSION"
rm -rf "$out"
mv "$tmp" "$out"
echo "dist: $out ($(du -sh "$out" | cut -f1)), version ${version:-unknown}"
