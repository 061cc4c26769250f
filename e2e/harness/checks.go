package harness

import (
	"context"
	"fmt"
	"path"

	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// representor finds the OVS interface of a Neutron port on a hypervisor
// (asked again for each flow: a port re-plugged between flows is seen).
func (pair *Pair) representor(ctx context.Context, hv, portID string) (string, error) {
	r, ok := pair.run.Hypervisors[hv]
	if !ok {
		return "", fmt.Errorf("no connection to hypervisor %s", hv)
	}
	name, ev, err := offload.FindRepresentor(ctx, r, portID)
	if ev.Name != "" {
		if _, serr := pair.SaveArtifact(path.Join("offload", "representor-lookup", hv+"-"+ev.Name), ev.Output); serr != nil {
			pair.Logf("saving evidence: %v", serr)
		}
	}
	if err != nil {
		return "", err // it names the port and the hypervisor
	}
	return name, nil
}

// RunOffloadChecks is the evidence window (evidence.Run) over this run's
// pair: a flood ping between the data addresses, then a sustained TCP flow
// and a sustained UDP flow, during each of which every configured check
// runs on both hypervisors. Verdicts and evidence files go to the results
// file. The returned error is for failures to run the window (transport,
// cancellation); the verdicts are judged by the caller with
// offload.ExpectPath.
func (pair *Pair) RunOffloadChecks(ctx context.Context) ([]evidence.FlowCheck, error) {
	return pair.runOffloadChecks(ctx, nil)
}

// runOffloadChecks is RunOffloadChecks with each flow's window held to
// barrier's (a fleet's round of checks; nil: alone).
func (pair *Pair) runOffloadChecks(ctx context.Context, barrier evidence.Barrier) (_ []evidence.FlowCheck, err error) {
	ctx, end, err := pair.run.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = end(err) }()
	stop := pair.Timings.Track(results.PhaseChecks)
	defer stop()
	w := pair.evidenceWindow()
	w.Barrier = barrier
	return evidence.Run(ctx, w)
}

// evidenceWindow is the evidence window's input: this pair, its
// connections and lookups, its artifacts directory, results file and log,
// and the look after a failed flow.
func (pair *Pair) evidenceWindow() evidence.Window {
	w := evidence.Window{
		Config:        pair.run.Config,
		Hypervisors:   pair.run.Hypervisors,
		Representor:   pair.representor,
		DataInterface: pair.dataInterface,
		Iperf:         pair.iperfInput,
		NotRun:        pair.notRunOnDamage,
		Explain:       pair.explainFailure,
		Record:        pair.recordChecks,
		Save:          pair.SaveArtifact,
		Logf:          pair.Logf,
		ChecksDone:    pair.checksDone,
	}
	for i := range w.Guests {
		if pair.Topology == nil || i >= len(pair.Topology.Servers) || i >= len(pair.Guests) {
			break // refused before it runs (NotRun) or not connected
		}
		srv := pair.Topology.Servers[i]
		w.Guests[i] = evidence.Guest{
			Name: srv.Name, Hypervisor: srv.Hypervisor, PortID: srv.DataPortID, MAC: srv.DataMAC, DataIP: srv.DataIP,
			Runner: pair.Guests[i],
		}
	}
	return w
}

// dataInterface finds (and caches) the name of a guest's data interface:
// the one carrying its data port's MAC. The representor check captures there
// as its positive control, the counters check reads its counters.
func (pair *Pair) dataInterface(ctx context.Context, i int) (string, error) {
	pair.ifaceMu.Lock()
	name, ok := pair.dataIfaces[i]
	pair.ifaceMu.Unlock()
	if ok {
		return name, nil
	}
	srv := pair.Topology.Servers[i]
	res, err := pair.Guests[i].Run(ctx, "ip -o link show")
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		return "", fmt.Errorf("%s: listing interfaces: %w", srv.Name, err)
	}
	name = interfaceWithMAC(string(res.Stdout), srv.DataMAC)
	if name == "" {
		return "", fmt.Errorf("%s: no interface has the data port's MAC %s", srv.Name, srv.DataMAC)
	}
	pair.ifaceMu.Lock()
	if pair.dataIfaces == nil {
		pair.dataIfaces = map[int]string{}
	}
	pair.dataIfaces[i] = name
	pair.ifaceMu.Unlock()
	return name, nil
}

func (pair *Pair) recordChecks(fcs []evidence.FlowCheck) error {
	return pair.Results.Update(func(r *results.Results) {
		r.Offload = append(r.Offload, evidence.CheckResults(fcs)...)
	})
}

// saveIperfEvidence writes each process's raw client and server JSON and
// returns the first client file (relative to the pair's directory).
func (pair *Pair) saveIperfEvidence(base string, m iperf3.Measurement) string {
	return evidence.SaveIperf(pair.SaveArtifact, pair.Logf, base, m)
}
