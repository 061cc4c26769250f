package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// Pair is one pair of guests of a Run and what is its own: its topology,
// guests, results file, wall times and damage. It is measured with the
// run's clients, hypervisor connections, log and output guard. The
// single-pair suites' pair (Run.ProvisionPair) writes into the run's
// directory and results file; a fleet's pair (Fleet.Provision) into its
// own, <run dir>/pairs/pNN.
type Pair struct {
	run *Run // the run it is measured in

	// Index, Nodes and ID place a fleet's pair: its index in the plan,
	// its sender and receiver nodes, its id in the results file
	// (fleet.PairID); zero for the single pair.
	Index int
	Nodes fleet.Pair
	ID    string
	// Broken is why a fleet's pair is not measured (its guests or
	// hypervisors could not be reached); every profile records it as the
	// pair's error.
	Broken error

	Dir     string // where its artifacts go: the run's, or <run dir>/pairs/pNN
	Results *results.Writer
	Timings *Timings

	Topology *fixtures.Topology
	// Guests are the SSH runners of Topology.Servers, index for index:
	// Guests[0] runs the iperf3 servers, Guests[1] the clients.
	Guests []remote.Runner
	// dataIfaces caches each guest's data interface name (by server index).
	ifaceMu    sync.Mutex
	dataIfaces map[int]string
	// witness answers the look after a failed window (nil = the topology's
	// cloud clients and a TCP connect: cloudWitness); damage is set when a
	// look found the topology damaged, and refuses later windows.
	witness witness
	damage  string

	// label leads the pair's lines in the run's log ("" for the single
	// pair); party is its name at a Gate and its directory (pNN).
	label string
	party string

	// checksDone, when set, is told the timing of each flow's checks once
	// they are done (evidence.Window.ChecksDone): the package's tests end
	// their fake flows by it.
	checksDone func(evidence.FlowTiming)
	// readsSpan, when set, is told the span in which the churn window's
	// reads may begin: from the clients' start to just after the reads
	// were stopped (the package's tests hold every read to it).
	readsSpan func(opened, closed time.Time)
}

// singlePair adds the run's one pair, which writes into the run's
// directory and results file and counts its wall times with the run's.
func (run *Run) singlePair() *Pair {
	pair := &Pair{run: run, Dir: run.Dir, Results: run.Results, Timings: &run.Timings}
	run.Pairs = append(run.Pairs, pair)
	return pair
}

// Logf writes one progress line to the run's log, led by the pair's label
// in a fleet.
func (pair *Pair) Logf(format string, args ...any) {
	if pair.label == "" {
		pair.run.Logf(format, args...)
		return
	}
	pair.run.Logf("%s: %s", pair.label, fmt.Sprintf(format, args...))
}

// SaveArtifact writes raw bytes under the pair's directory (sub-directories
// are created) and returns the path relative to it.
func (pair *Pair) SaveArtifact(rel string, data []byte) (string, error) {
	if err := pair.run.OutputLost(); err != nil {
		return "", err
	}
	path := filepath.Join(pair.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", pair.run.Failed(err)
	}
	if err := results.WriteFileAtomic(path, data, 0o644); err != nil {
		return "", pair.run.Failed(err)
	}
	return rel, nil
}

// finish writes the pair's own results file's timings and end time (a
// fleet's pair; the connections and the log are the run's, Run.Close).
func (pair *Pair) finish() error {
	if pair.run.OutputLost() != nil || pair.Results == nil {
		return nil
	}
	return finishResults(pair.Results, pair.Timings)
}

func (pair *Pair) describeTopology() string {
	var parts []string
	for _, srv := range pair.Topology.Servers {
		where := srv.Hypervisor
		if where == "" {
			where = "host " + shortID(srv.HostID)
		}
		parts = append(parts, fmt.Sprintf("%s on %s (data %s %s, access %s)", srv.Name, where, srv.DataIP, srv.DataMAC, srv.AccessIP()))
	}
	return strings.Join(parts, "; ")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
