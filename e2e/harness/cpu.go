package harness

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/hostcpu"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// cpuProbe reads both hypervisors' CPU counters just before a measured
// window's clients start and just after the last one returned; nothing
// runs on a hypervisor between the two. A UDP stream-setup retry starts
// the clients again: its readings replace the abandoned attempt's.
type cpuProbe struct {
	run *Run
	ctx context.Context
	hvs []string // the pair's hypervisors, the iperf3 server's first

	mu             sync.Mutex
	readBefore     time.Time
	readAfter      time.Time
	before, after  []cpuReading
	afterForBefore bool // after belongs to the latest before
}

type cpuReading struct {
	r   hostcpu.Reading
	err error
}

// newCPUProbe is nil when traffic.host_cpu is off.
func (pair *Pair) newCPUProbe(ctx context.Context) *cpuProbe {
	if !pair.run.Config.Traffic.HostCPU || pair.Topology == nil {
		return nil
	}
	p := &cpuProbe{run: pair.run, ctx: ctx}
	for _, srv := range pair.Topology.Servers {
		p.hvs = append(p.hvs, srv.Hypervisor)
	}
	return p
}

// read takes one reading on every hypervisor of the pair at once.
func (p *cpuProbe) read() []cpuReading {
	out := make([]cpuReading, len(p.hvs))
	var wg sync.WaitGroup
	for i, hv := range p.hvs {
		r, ok := p.run.Hypervisors[hv]
		if !ok {
			name := hv
			if name == "" {
				name = fmt.Sprintf("of server %d (its name is unknown without cloud.admin)", i)
			}
			out[i].err = fmt.Errorf("no connection to hypervisor %s", name)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Run(p.ctx, hostcpu.Command())
			if err == nil {
				err = res.Err()
			}
			if err != nil {
				out[i].err = err
				return
			}
			out[i].r, out[i].err = hostcpu.ParseReading(res.Stdout)
		}()
	}
	wg.Wait()
	return out
}

// Before is iperf3's ClientsStarting: the servers listen, no client runs.
func (p *cpuProbe) Before() {
	at := time.Now()
	rs := p.read()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readBefore, p.before, p.after, p.afterForBefore = at, rs, nil, false
}

// After is iperf3's ClientsDone: every client has returned.
func (p *cpuProbe) After() {
	rs := p.read()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readAfter, p.after, p.afterForBefore = time.Now(), rs, true
}

// Result is the repeat's host CPU; nil when the clients never started
// (nothing was read).
func (p *cpuProbe) Result() *results.HostCPURun {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.before == nil {
		return nil
	}
	out := &results.HostCPURun{ReadBefore: p.readBefore.UTC(), ReadAfter: p.readAfter.UTC()}
	for i, hv := range p.hvs {
		h := results.HostCPU{Hypervisor: hv}
		b := p.before[i]
		switch {
		case b.err != nil:
			h.Error = "reading before the window: " + b.err.Error()
		case !p.afterForBefore:
			h.Error = "no reading after the window (the clients did not return)"
		case p.after[i].err != nil:
			h.Error = "reading after the window: " + p.after[i].err.Error()
		default:
			a := p.after[i].r
			h.BootID, h.Hostname = a.BootID, a.Hostname
			u, err := hostcpu.Delta(b.r, a)
			if err != nil {
				h.Error = err.Error()
				break
			}
			h.CPUUsage = u
		}
		out.Hosts = append(out.Hosts, h)
	}
	return out
}

// guestCPU is iperf3's own CPU figures of a successful repeat.
func guestCPU(r iperf3.Result) *results.GuestCPU {
	return &results.GuestCPU{ClientPercent: r.CPU.HostTotal, ServerPercent: r.CPU.RemoteTotal}
}

// cpuLine is the console summary of a repeat's CPU: "host CPU: compute1
// 1.23 cores (ovs-vswitchd 0.40), compute2 ...; guests: client 45.0 %,
// server 30.2 %".
func cpuLine(run results.Run) string {
	var parts []string
	if c := run.HostCPU; c != nil {
		var hs []string
		for _, h := range c.Hosts {
			switch {
			case h.Error != "":
				hs = append(hs, fmt.Sprintf("%s no number (%s)", h.Hypervisor, h.Error))
			case h.OVS != nil:
				hs = append(hs, fmt.Sprintf("%s %s cores busy (ovs-vswitchd %s)", h.Hypervisor, results.FormatCores(h.Busy), results.FormatCores(*h.OVS)))
			default:
				hs = append(hs, fmt.Sprintf("%s %s cores busy (no ovs-vswitchd figure: %s)", h.Hypervisor, results.FormatCores(h.Busy), h.OVSMissing))
			}
		}
		line := "host CPU: " + strings.Join(hs, ", ")
		if len(c.Hosts) == 2 && c.Hosts[0].BootID != "" && c.Hosts[0].BootID == c.Hosts[1].BootID {
			line += " (one machine: same boot id)"
		}
		parts = append(parts, line)
	}
	if g := run.GuestCPU; g != nil {
		parts = append(parts, fmt.Sprintf("guests' iperf3: sender %.1f %%, receiver %.1f %%", g.ClientPercent, g.ServerPercent))
	}
	return strings.Join(parts, "; ")
}
