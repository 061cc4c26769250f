package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The VCS stamp of a binary built from a checkout, the -ldflags override
// that a test binary needs, and neither: "unknown", never a guess.
func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mosk-qa/asap2-e2e", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "-compiler", Value: "gc"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "1d40259abcdef0123456789abcdef0123456789a"}, {Key: "vcs.time", Value: "2026-05-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	testBinary := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mosk-qa/asap2-e2e"}}
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		o    Override
		want results.HarnessBuild
	}{
		{"stamped", stamped, Override{}, results.HarnessBuild{Version: "(devel)", Revision: "1d40259abcdef0123456789abcdef0123456789a", Time: "2026-05-01T10:00:00Z", Modified: true, Source: results.HarnessSourceVCS}},
		{"override wins", stamped, Override{Revision: "cafe", Modified: "false"}, results.HarnessBuild{Version: "(devel)", Revision: "cafe", Source: results.HarnessSourceLDFlags}},
		{"test binary with override", testBinary, Override{Revision: "cafe", Modified: "true", Time: "2026-05-02T00:00:00Z"}, results.HarnessBuild{Version: results.Unknown, Revision: "cafe", Modified: true, Time: "2026-05-02T00:00:00Z", Source: results.HarnessSourceLDFlags}},
		{"GOFLAGS' dirty commit", testBinary, Override{Revision: "cafe+modified"}, results.HarnessBuild{Version: results.Unknown, Revision: "cafe", Modified: true, Source: results.HarnessSourceLDFlags}},
		{"dist's version and commit", testBinary, Override{Version: "v0.0.0-20261205234954-09f1769abcde", Revision: "cafe"}, results.HarnessBuild{Version: "v0.0.0-20261205234954-09f1769abcde", Revision: "cafe", Source: results.HarnessSourceLDFlags}},
		{"only the suffix", testBinary, Override{Revision: "+modified"}, results.HarnessBuild{Version: results.Unknown, Revision: "+modified", Source: results.HarnessSourceLDFlags}},
		{"test binary", testBinary, Override{}, results.HarnessBuild{Version: results.Unknown, Revision: results.Unknown, Source: results.HarnessSourceNone}},
		{"no build info", nil, Override{}, results.HarnessBuild{Version: results.Unknown, Revision: results.Unknown, Source: results.HarnessSourceNone}},
	}
	for _, c := range cases {
		if got := From(c.bi, c.o); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// This test binary itself: whatever it carries, Read names a source and
// says unknown rather than leaving a field empty.
func TestReadNeverEmpty(t *testing.T) {
	h := Read()
	if h.Version == "" || h.Revision == "" || h.Source == "" {
		t.Errorf("Read() = %+v", h)
	}
}
