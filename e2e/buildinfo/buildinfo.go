// Package buildinfo says which build of the harness is running: the main
// module's version and the VCS commit the Go toolchain stamped into the
// binary (runtime/debug.ReadBuildInfo: vcs.revision, vcs.modified,
// vcs.time). A test binary (`go test`, how the suites run) carries no VCS
// stamp, so the commit can be given at build time:
//
//	go test -ldflags "-X github.com/mosk-qa/asap2-e2e/e2e/buildinfo.Revision=$(git rev-parse HEAD)" ./suites/perf/
//
// make e2e does that; lab/job.sh gives it to every build of its job (ginkgo's
// --ldflags, GOFLAGS for go test -c: one -X, so a dirty tree's commit is
// "<commit>+modified"). With
// neither, the commit is results.Unknown, said as such, never guessed.
// make dist (tools/dist.sh) also gives the version, a Go pseudo-version of
// the commit (lab/lib/buildinfo.sh harness_version), which the image is
// tagged with: a binary of dist/ says which image it came from.
//
// Read is the running binary's build: the -ldflags -X variables Revision,
// Modified and Time first, then ReadBuildInfo; From is its pure part; Version,
// when linked in, overrides the main module's version. The harness records the
// build as environment.harness (issue 37).
package buildinfo

import (
	"runtime/debug"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Revision, Modified and Time are the -ldflags -X override of the VCS
// stamp: the commit, "true" for a tree with uncommitted changes, the
// commit's time. Set, Revision wins over the stamp. Version, set, wins
// over the main module's version (a test binary has none).
var (
	Version  string
	Revision string
	Modified string
	Time     string
)

// Read is the running binary's build (From over debug.ReadBuildInfo and
// the override).
func Read() results.HarnessBuild {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return From(bi, Override{Version: Version, Revision: Revision, Modified: Modified, Time: Time})
}

// ModifiedSuffix on an overriding Revision says the tree had uncommitted
// changes, as Modified "true" does.
const ModifiedSuffix = "+modified"

// Override is what -ldflags -X set (empty fields: not set).
type Override struct {
	Version, Revision, Modified, Time string
}

// From is the build bi (nil: no build information) describes, with o
// before bi's VCS settings: a test binary has none, a binary built from
// a checkout has them.
func From(bi *debug.BuildInfo, o Override) results.HarnessBuild {
	h := results.HarnessBuild{Version: results.Unknown, Revision: results.Unknown, Source: results.HarnessSourceNone}
	if bi != nil && bi.Main.Version != "" {
		h.Version = bi.Main.Version
	}
	if o.Version != "" {
		h.Version = o.Version
	}
	if o.Revision != "" {
		h.Revision, h.Source = o.Revision, results.HarnessSourceLDFlags
		h.Modified, h.Time = o.Modified == "true", o.Time
		// GOFLAGS holds one -ldflags of one -X (its entries split at
		// spaces): lab/job.sh gives a dirty tree's commit as
		// "<commit>+modified".
		if rev, ok := strings.CutSuffix(o.Revision, ModifiedSuffix); ok && rev != "" {
			h.Revision, h.Modified = rev, true
		}
		return h
	}
	if bi == nil {
		return h
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				h.Revision, h.Source = s.Value, results.HarnessSourceVCS
			}
		case "vcs.modified":
			h.Modified = s.Value == "true"
		case "vcs.time":
			h.Time = s.Value
		}
	}
	if h.Source == results.HarnessSourceNone {
		h.Modified, h.Time = false, ""
	}
	return h
}
