package harness

import (
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

func TestTimingsKeepsFirstSeenOrderAndSums(t *testing.T) {
	var tm Timings
	tm.Add(results.PhaseProvisioning, 2*time.Second)
	tm.Add(results.PhaseTraffic, 30*time.Second)
	tm.Add(results.PhaseProvisioning, time.Second)
	got := tm.Snapshot()
	if len(got) != 2 || got[0].Phase != results.PhaseProvisioning || got[0].Spent != 3*time.Second ||
		got[1].Phase != results.PhaseTraffic || got[1].Spent != 30*time.Second {
		t.Fatalf("Snapshot() = %+v", got)
	}
}

func TestProgressLineSaysWhatRunsAndUntilWhen(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 40, 37, 0, time.UTC)
	got := progressLine("TCP 15 streams", 2, 3, 30*time.Second, start)
	if want := "TCP 15 streams, repeat 2/3: 30s, until 12:41:07"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// pairOf is run's one pair (as Run.ProvisionPair makes it) with topo and
// guests.
func pairOf(run *Run, topo *fixtures.Topology, guests ...remote.Runner) *Pair {
	pair := run.singlePair()
	pair.Topology, pair.Guests = topo, guests
	return pair
}
