package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func TestSearchProfileSplitsTheRatePerStream(t *testing.T) {
	sc := config.PPSSearch{Streams: 4, LengthBytes: 64}
	p := searchProfile("ndr-p4-l64", sc, 100e6)
	args := strings.Join(p.ClientArgs(p.Streams), " ")
	if p.BitratePerStream != 25e6 || args != "-P 4 -u -b 25000000 -l 64" {
		t.Errorf("got %d, %q", p.BitratePerStream, args)
	}
	if u := searchProfile("x", sc, 0); u.BitratePerStream != 0 || !strings.Contains(strings.Join(u.ClientArgs(4), " "), "-b 0") {
		t.Errorf("unlimited: %+v", u)
	}
	// a rate below one bit/s per stream is never 0 (which iperf3 reads as unlimited)
	if tiny := searchProfile("x", sc, 1); tiny.BitratePerStream != 1 {
		t.Errorf("tiny rate per stream %d", tiny.BitratePerStream)
	}
}

// lossless is the recorded -P1 -l64 sample edited in memory into a run
// that lost nothing (receiver bytes = sender bytes, no lost packets).
func lossless(t *testing.T) []byte {
	var doc map[string]any
	if err := json.Unmarshal(iperfJSON(t, "v3.12-udp-b0-p1-l64.json"), &doc); err != nil {
		t.Fatal(err)
	}
	end := doc["end"].(map[string]any)
	sent, recv := end["sum_sent"].(map[string]any), end["sum_received"].(map[string]any)
	recv["bytes"], recv["lost_packets"], recv["packets"] = sent["bytes"], 0, sent["packets"]
	recv["bits_per_second"] = sent["bits_per_second"]
	out, _ := json.Marshal(doc)
	return out
}

// RunSearch through the fake guests: every trial is one iperf3 run
// (evidence saved), the result is in the results file, and a path that
// loses at every rate reports none found.
func TestRunSearchThroughTheGuests(t *testing.T) {
	for _, c := range []struct {
		name   string
		client []byte
		found  bool
		trials int
	}{
		// Lossless at the sender's maximum: unlimited trial, then the
		// verification at the rate it reached.
		{"lossless", nil, true, 2},
		// The recorded -b 0 run lost 4.8 %: every trial fails (rates below
		// it are not offered by this canned sender either).
		{"lossy", iperfJSON(t, "v3.12-udp-b0-p1-l64.json"), false, 3}, // the 4th is kept for a verification that never comes
	} {
		t.Run(c.name, func(t *testing.T) {
			wd := newPair(t)
			wd.cfg.Run.ExpectedPath = results.PathBaseline
			wd.cfg.PPS.Search = config.PPSSearch{LengthBytes: 64, Streams: 1, MaxTrials: 4, TrialDuration: time.Second, ResolutionPercent: 1}
			out := c.client
			if out == nil {
				out = lossless(t)
			}
			wd.guests[1].Play.Client = fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
			s := wd.session()
			sr, err := s.RunSearch(context.Background(), results.SearchNDR, "ndr-p1-l64", 0)
			if err != nil {
				t.Fatal(err)
			}
			if sr.Found != c.found || len(sr.Trials) != c.trials {
				t.Fatalf("found %v after %d trials (%s)", sr.Found, len(sr.Trials), sr.StopReason)
			}
			r, _ := iperf3.Parse(out)
			if c.found {
				if sr.RateBps != r.OfferedBps || sr.RatePps != r.OfferedBps/512 || sr.Trials[1].Phase != "verify" {
					t.Errorf("rate %v (%v pps), want the sender's %v", sr.RateBps, sr.RatePps, r.OfferedBps)
				}
			} else if sr.RateBps != 0 || sr.RatePps != 0 {
				t.Errorf("none found but rate %v", sr.RateBps)
			}
			if sr.Iperf3Version != "iperf 3.12" || !strings.Contains(sr.PacketBasis, "bytes / 64 B") {
				t.Errorf("version %q basis %q", sr.Iperf3Version, sr.PacketBasis)
			}
			for _, tr := range sr.Trials {
				if tr.EvidenceFile == "" || tr.OfferedPps <= 0 || tr.StartedAt.IsZero() {
					t.Errorf("trial %+v lacks evidence, pps or start", tr)
				}
				if _, err := os.Stat(filepath.Join(s.Dir, tr.EvidenceFile)); err != nil {
					t.Errorf("evidence: %v", err)
				}
			}
			snap := s.Results.Snapshot()
			if len(snap.Searches) != 1 || snap.Searches[0].ID != "ndr-p1-l64" || snap.Searches[0].Path != results.PathBaseline {
				t.Errorf("results file: %+v", snap.Searches)
			}
			if !strings.Contains(wd.console.String(), "ndr-p1-l64 trial 1/4 at unlimited (-b 0)") {
				t.Errorf("log: %s", wd.console.String())
			}
		})
	}
}
