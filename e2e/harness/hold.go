package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Issue 38's evidence windows that read the hypervisors during a flow:
// the rule-scale profile (rulescale.go) and the churn window (churn.go).
// Both read each hypervisor of the pair every poll of their interval, in
// their own window (never a throughput window), and state the reads' own
// cost.

// holdHost is one hypervisor of the pair as these windows read it.
type holdHost struct {
	*ctHost
	rep      string // the representor of the pair's data port on it ("" when not found)
	repErr   string
	ovs      string // ovs-vswitchd's version from the environment ("" when not known)
	bus      string // the NIC's PCI address (ethtool -i bus-info of the representor)
	driver   string
	mu       sync.Mutex
	readCost []time.Duration
}

// holdHosts are the pair's hypervisors, the datapath told apart, each
// with its representor and what the environment recorded of it.
func (pair *Pair) holdHosts(ctx context.Context) []*holdHost {
	env := pair.Results.Snapshot().Environment
	var out []*holdHost
	for i, h := range pair.connectionHosts(ctx) {
		hh := &holdHost{ctHost: h}
		srv := pair.Topology.Servers[i]
		for _, e := range env.Hypervisors {
			if e.Name == srv.Hypervisor {
				hh.ovs, hh.bus, hh.driver = e.OVSVersion, e.NICBusInfo, e.NICDriver
			}
		}
		if h.err == nil {
			if rep, err := pair.representor(ctx, srv.Hypervisor, srv.DataPortID); err != nil {
				hh.repErr = err.Error()
			} else {
				hh.rep = rep
			}
		}
		out = append(out, hh)
	}
	return out
}

// run runs cmd on the hypervisor within ctx, its stdout or an error that
// names the hypervisor, the command and its exit.
func (h *holdHost) run(ctx context.Context, cmd string) ([]byte, error) {
	if h.err != nil {
		return nil, h.err
	}
	r, err := h.runner.Run(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	if r.ExitCode != 0 {
		return nil, fmt.Errorf("%s: `%s` exited %d: %s", h.name, cmd, r.ExitCode, clipLine(strings.TrimSpace(string(r.Stderr))))
	}
	return r.Stdout, nil
}

// eachHost runs read on every host at once and returns when all have;
// each read's wall time is its host's cost (costMS).
func eachHost(hosts []*holdHost, read func(i int, h *holdHost)) {
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			read(i, h)
			h.cost(time.Since(began))
		}()
	}
	wg.Wait()
}

// cost records one read's wall time.
func (h *holdHost) cost(d time.Duration) {
	h.mu.Lock()
	h.readCost = append(h.readCost, d)
	h.mu.Unlock()
}

// costMS is the reads' mean and longest wall time, in milliseconds.
func (h *holdHost) costMS() (mean, most float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.readCost) == 0 {
		return 0, 0
	}
	var sum time.Duration
	for _, d := range h.readCost {
		sum += d
		most = max(most, float64(d)/float64(time.Millisecond))
	}
	return float64(sum) / float64(len(h.readCost)) / float64(time.Millisecond), most
}

// coverage reads coverage/show, nil when it fails (the error says why).
func (h *holdHost) coverage(ctx context.Context, appctl int) (*offload.Coverage, error) {
	out, err := h.run(ctx, offload.CoverageCommand(appctl))
	if err != nil {
		return nil, err
	}
	c, err := offload.ParseCoverage(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	return &c, nil
}

// pairFlows reads dpctl/dump-flows -m and keeps the pair's flows of proto.
func (h *holdHost) pairFlows(ctx context.Context, macs []string, proto string) ([]offload.DpctlFlow, error) {
	out, err := h.run(ctx, offload.DpctlFlowsCommand+" -m")
	if err != nil {
		return nil, err
	}
	flows, err := offload.ParseDpctl(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	return offload.PairFlows(flows, macs, proto)
}

// repPackets reads the representor's slow-path packets (received and
// sent): its cpu_hit counters where the driver keeps them (mlx5: its link
// counters are the VF vport's and count offloaded packets too, see
// offload/counters.go), else — a device with no hardware datapath (veth,
// tap) — its link counters. Without cpu_hit support (iproute2 before 5.18)
// there is no slow-path count: an error says so.
func (h *holdHost) repPackets(ctx context.Context) (*uint64, error) {
	if h.rep == "" {
		return nil, fmt.Errorf("%s: no representor: %s", h.name, h.repErr)
	}
	read := func(cmd string) (offload.LinkStats, error) {
		out, err := h.run(ctx, cmd)
		if err != nil {
			return offload.LinkStats{}, err
		}
		return offload.ParseLinkStats(out)
	}
	st, err := read(offload.CPUHitStatsCommand(h.rep))
	switch {
	case errors.Is(err, offload.ErrNoCounters):
		if st, err = read(offload.LinkStatsCommand(h.rep)); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", h.name, h.rep, err)
		}
	case err != nil:
		return nil, fmt.Errorf("%s: %s: no cpu_hit (slow-path) counters, whose link counters cannot tell offloaded from host-forwarded packets: %w", h.name, h.rep, err)
	}
	n := st.RxPackets + st.TxPackets
	return &n, nil
}

// everyPoll calls read at once and then every iv.Poll from start until
// ctx ends, each call bounded by iv.Timeout; the reads' times are from
// start. It returns when ctx ends.
func everyPoll(ctx context.Context, start time.Time, iv config.Interval, read func(ctx context.Context, at time.Duration)) {
	for n := 0; ctx.Err() == nil; n++ {
		next := start.Add(time.Duration(n) * iv.Poll)
		if d := time.Until(next); d > 0 {
			if err := wait.Sleep(ctx, d); err != nil {
				return
			}
		}
		rctx, cancel := context.WithTimeout(ctx, iv.Timeout)
		read(rctx, time.Since(start))
		cancel()
	}
}

// clipLine keeps one line of a command's stderr short.
func clipLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// appctlSecs is ovs-appctl's own timeout inside a read bounded by d.
func appctlSecs(d time.Duration) int { return offload.AppctlSecs(d) }

// holdReady says why a window cannot run: damage from an earlier one, or
// no guest pair.
func (pair *Pair) holdReady(id string) error {
	if err := pair.notRunOnDamage(id); err != nil {
		return err
	}
	if pair.Topology == nil || len(pair.Topology.Servers) < 2 || len(pair.Guests) < 2 {
		return fmt.Errorf("%s: no guest pair to run between (the topology is not built)", id)
	}
	return nil
}

// put logs a failed write of a failed window's result (its own error is
// the one returned).
func (pair *Pair) put(id string, err error) {
	if err != nil {
		pair.Logf("%s: %v", id, err)
	}
}

// saveReads saves a window's reads of one hypervisor as evidence and
// returns the file ("" when not saved: the log says why).
func (pair *Pair) saveReads(name string, reads any) string {
	b, err := json.MarshalIndent(reads, "", "  ")
	if err == nil {
		var rel string
		if rel, err = pair.SaveArtifact(name, b); err == nil {
			return rel
		}
	}
	pair.Logf("%s not saved: %v", name, err)
	return ""
}
