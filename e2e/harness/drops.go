package harness

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// dropProbe reads OVS's drop counters (offload.CoverageCommand) on the
// pair's hypervisors just before a measured window's clients start and
// just after they return, beside the CPU readings and at the same moments
// (in a concurrent fleet: before the start barrier and after the end
// barrier), never during the window. The growth names the hypervisor whose
// OVS dropped packets of a failed window, and why (a drop flow, a tunnel
// next hop not resolved, a failed upcall): the sentence the look after a
// failed window could not give, since a drop leaves no state behind.
type dropProbe struct {
	run *Run
	ctx context.Context
	hvs []string // the pair's hypervisors with a runner, once each

	mu             sync.Mutex
	before, after  []coverageReading
	afterForBefore bool
}

type coverageReading struct {
	c   offload.Coverage
	err error
}

// newDropProbe is nil when the run reaches no hypervisor of the pair
// (no hypervisor access configured).
func (pair *Pair) newDropProbe(ctx context.Context) *dropProbe {
	if pair.Topology == nil {
		return nil
	}
	p := &dropProbe{run: pair.run, ctx: ctx}
	for _, srv := range pair.Topology.Servers {
		if srv.Hypervisor != "" && pair.run.Hypervisors[srv.Hypervisor] != nil && !slices.Contains(p.hvs, srv.Hypervisor) {
			p.hvs = append(p.hvs, srv.Hypervisor)
		}
	}
	if len(p.hvs) == 0 {
		return nil
	}
	return p
}

// dropReadBound caps a reading's bound: a hypervisor that stopped
// answering during the window must not hold the failure's explanation (the
// look after it) for all of intervals.command.
const dropReadBound = 10 * time.Second

// dropBound is a reading's bound: intervals.command, at most dropReadBound.
func dropBound(c *config.Config) time.Duration {
	return min(c.Interval(config.IntervalCommand).Timeout, dropReadBound)
}

// coverageCommand is the reading's command under c.
func coverageCommand(c *config.Config) string {
	return offload.CoverageCommand(offload.AppctlSecs(dropBound(c)))
}

// read takes one reading on each hypervisor at once, each bounded by
// dropBound.
func (p *dropProbe) read() []coverageReading {
	bound := dropBound(p.run.Config)
	out := make([]coverageReading, len(p.hvs))
	var wg sync.WaitGroup
	for i, hv := range p.hvs {
		r := p.run.Hypervisors[hv]
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(p.ctx, bound)
			defer cancel()
			res, err := r.Run(ctx, coverageCommand(p.run.Config))
			if err == nil {
				err = res.Err()
			}
			if err != nil {
				out[i].err = err
				return
			}
			out[i].c, out[i].err = offload.ParseCoverage(string(res.Stdout))
		}()
	}
	wg.Wait()
	return out
}

// Before is taken when no client runs yet; a later Before (a UDP setup
// retry) replaces it.
func (p *dropProbe) Before() {
	rs := p.read()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.before, p.after, p.afterForBefore = rs, nil, false
}

// After is taken once every client returned.
func (p *dropProbe) After() {
	rs := p.read()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.after, p.afterForBefore = rs, true
}

// Result is each hypervisor's drops over the window; nil when no reading
// was taken before it (the clients never started).
func (p *dropProbe) Result() []results.OVSDrops {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.before == nil {
		return nil
	}
	out := make([]results.OVSDrops, len(p.hvs))
	for i, hv := range p.hvs {
		d := results.OVSDrops{Hypervisor: hv}
		b := p.before[i]
		switch {
		case b.err != nil:
			d.Error = "reading before the window: " + b.err.Error()
		case !p.afterForBefore:
			d.Error = "no reading after the window (the clients did not return)"
		case p.after[i].err != nil:
			d.Error = "reading after the window: " + p.after[i].err.Error()
		default:
			ds, err := offload.DropsBetween(b.c, p.after[i].c)
			if err != nil {
				d.Error = err.Error()
				break
			}
			d.Drops = ds
		}
		out[i] = d
	}
	return out
}
