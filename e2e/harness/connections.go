package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// NoConntrack is a connection-scale result's share without port security.
const NoConntrack = "not applicable: data_port.port_security is false, no conntrack on the path (the data ports have no security group)"

// ConnectionProfile is the iperf3 profile of n concurrent TCP connections,
// each capped at perConnection bit/s (iperf3 -b, per stream; 0 = unlimited).
func ConnectionProfile(n int, perConnection int64) iperf3.Profile {
	id := results.ConnectionProfileID(n)
	name := fmt.Sprintf("%d concurrent TCP connections", n)
	if perConnection > 0 {
		name += fmt.Sprintf(" at %s each", results.FormatBps(float64(perConnection)))
	}
	return iperf3.Profile{ID: id, Name: name, Row: id, Protocol: iperf3.TCP, Streams: n,
		BitratePerStream: perConnection, Length: ConnectionWriteBytes, Table: iperf3.TableConnections}
}

// ConnectionWriteBytes is the connection-scale profile's iperf3 -l: 16 KiB
// writes instead of TCP's 128 KiB default. iperf3 keeps one buffer of -l
// bytes per stream in a file in the guest's /tmp (iperf_new_stream), so
// 10000 connections need 160 MB there instead of 1.3 GB (the lab's guests
// have a 512 MB tmpfs /tmp, as many cloud images do; 128 KiB failed there).
const ConnectionWriteBytes = 16 << 10

// connectionFlows are the TCP connections n streams open from client to
// server: ceil(n/128) processes on consecutive ports, each its streams and
// its control connection (conntrack.IperfFlows). The split is SplitStreams'
// with iperf3's MAX_STREAMS per process, the one Run makes.
func connectionFlows(n, basePort int, client, server string) ([]conntrack.Flow, []int, error) {
	c, err1 := netip.ParseAddr(client)
	s, err2 := netip.ParseAddr(server)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, fmt.Errorf("the pair's data addresses: %w", err)
	}
	split, _ := iperf3.SplitStreams(n, config.StreamsPerProcess, 0, iperf3.MultiThreadedSince)
	var flows []conntrack.Flow
	for i, st := range split {
		flows = append(flows, conntrack.IperfFlows(false, st, c.Unmap(), s.Unmap(), uint16(basePort+i))...)
	}
	return flows, split, nil
}

// ctHost is one hypervisor the connection-scale profile samples.
type ctHost struct {
	name      string
	runner    remote.Runner
	userspace bool   // OVS's userspace datapath: its conntrack is OVS's own table
	last      []byte // the last kept read's table, for the evidence
	err       error  // no runner, or the datapath could not be told
}

// readSample reads hv's table once, bounded by bound: the kernel's, and on
// a userspace datapath OVS's own when the kernel's holds none of the flows.
func (h *ctHost) readSample(ctx context.Context, bound time.Duration, flows []conntrack.Flow) (conntrack.Sample, []byte) {
	if h.err != nil {
		return conntrack.Sample{Error: h.err.Error()}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	run := func(cmd string) ([]byte, error) {
		r, err := h.runner.Run(ctx, cmd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.name, err)
		}
		if r.ExitCode != 0 {
			return nil, fmt.Errorf("%s: `%s` exited %d: %s", h.name, cmd, r.ExitCode, strings.TrimSpace(string(r.Stderr)))
		}
		return r.Stdout, nil
	}
	kernel, err := run(conntrack.ReadCommand)
	if err != nil {
		return conntrack.Sample{Source: conntrack.SourceKernel, Error: err.Error()}, nil
	}
	// The table's fill beside it: a full table drops new connections,
	// which the share must not be read as a lack of offload.
	fill := func(smp *conntrack.Sample, cmd string) {
		if out, err := run(cmd); err == nil {
			if sz, err := conntrack.ParseSize(out); err == nil {
				smp.Fill = &sz
			}
		}
	}
	smp := conntrack.SampleOf(kernel, nil, flows)
	if !h.userspace || smp.Error != "" || smp.Found > 0 {
		if smp.Error == "" {
			fill(&smp, conntrack.SizeCommand)
		}
		return smp, kernel
	}
	ovs, err := run(conntrack.DPCtlCommand)
	if err != nil {
		return conntrack.Sample{Source: conntrack.SourceOVS, Error: err.Error()}, nil
	}
	smp = conntrack.SampleOf(kernel, ovs, flows)
	if smp.Error == "" {
		fill(&smp, conntrack.DPCtlSizeCommand)
	}
	return smp, ovs
}

// connectionHosts are the pair's hypervisors, each with its datapath told
// apart before the traffic starts (DpctlFlowsCommand's "flow-dump from"
// headers: the userspace datapath).
func (pair *Pair) connectionHosts(ctx context.Context) []*ctHost {
	var out []*ctHost
	for i, srv := range pair.Topology.Servers {
		h := &ctHost{name: srv.Hypervisor}
		if h.name == "" {
			h.name = fmt.Sprintf("hypervisor of server %d", i)
		}
		r, ok := pair.run.Hypervisors[srv.Hypervisor]
		if !ok {
			h.err = fmt.Errorf("no connection to %s", h.name)
			out = append(out, h)
			continue
		}
		h.runner = r
		h.userspace, h.err = userspaceDatapath(ctx, r, h.name)
		out = append(out, h)
	}
	return out
}

// RunConnections runs the connection-scale profile at n connections: n
// TCP streams over ceil(n/128) iperf3 processes, connections.offload_wait
// of omit period (-O) then connections.duration measured. With port
// security the pair's hypervisors' conntrack tables are read every
// intervals.conntrack_sample.poll during the omit period only
// (conntrack.Sampler: no read ends after it), and each hypervisor's share
// and time until offloaded are its samples' (conntrack.Summarize). The
// result is written into the results file before it returns.
func (pair *Pair) RunConnections(ctx context.Context, n int) (_ results.ConnectionResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	id := results.ConnectionProfileID(n)
	cc := pair.run.Config.Connections
	procs := config.ConnectionProcesses(n)
	cr := results.ConnectionResult{N: n, Path: pair.run.Config.Run.ExpectedPath, Processes: procs, Opened: n + procs,
		BitratePerConnectionBps: cc.BitratePerConnection, DurationSeconds: cc.Duration.Seconds(), OffloadWaitSeconds: cc.OffloadWait.Seconds(), StartedAt: time.Now().UTC()}
	if err != nil {
		return cr, err
	}
	defer func() { err = end(err) }()
	if err := pair.notRunOnDamage(id); err != nil {
		cr.Error = err.Error()
		return cr, err
	}
	if pair.Topology == nil || len(pair.Topology.Servers) < 2 || len(pair.Guests) < 2 {
		err := fmt.Errorf("%s: no guest pair to run between (the topology is not built)", id)
		cr.Error = err.Error()
		return cr, err
	}
	p := ConnectionProfile(n, cc.BitratePerConnection)
	in := pair.iperfInput(p, cc.Duration)
	in.Omit = cc.OffloadWait
	in.MaxStreamsPerProcess = config.StreamsPerProcess
	// A count of connections, not a stall detector: up to 128 unlimited
	// streams share one iperf3 process, and on a loaded path one of them
	// can starve past a short TCP_USER_TIMEOUT (the lab, 2026-12-04: N=100
	// in one iperf3 3.12 process failed "Connection timed out" at
	// traffic.stall_timeout's 5 s and passed without it). A run that stalls
	// is still ended by its bound (-t + -O + intervals.iperf_server + the
	// setup allowance for its streams, iperf3.SetupAllowance), after a look
	// at the client's guest that the error and the evidence keep.
	in.StallTimeout = 0

	var (
		hosts   []*ctHost
		flows   []conntrack.Flow
		ticks   []conntrack.Tick
		wg      sync.WaitGroup
		stopCtx context.Context
		stop    context.CancelFunc = func() {}
		once    sync.Once
	)
	iv := pair.run.Config.Interval(config.IntervalConntrackSample)
	if !pair.run.Config.DataPort.PortSecurity {
		cr.NotApplicable = NoConntrack
	} else {
		var ferr error
		flows, _, ferr = connectionFlows(n, in.BasePort, pair.Topology.Servers[1].DataIP, pair.Topology.Servers[0].DataIP)
		if ferr != nil {
			cr.Error = ferr.Error()
			_ = pair.Results.PutConnection(cr)
			return cr, ferr
		}
		hosts = pair.connectionHosts(ctx)
		stopCtx, stop = context.WithCancel(ctx)
	}
	defer stop()
	in.ClientsStarting = func(t time.Time) {
		pair.Logf("%s: %d connections%s over %d iperf3 process(es): %s offload wait (-O) then %s measured, until %s",
			id, n, capWords(cc.BitratePerConnection), procs, cc.OffloadWait, cc.Duration, t.Add(cc.OffloadWait+cc.Duration).UTC().Format("15:04:05"))
		if hosts == nil {
			return
		}
		once.Do(func() {
			sm := conntrack.Sampler{Start: t, Until: t.Add(cc.OffloadWait), Every: iv.Poll,
				Read: func(ctx context.Context) []conntrack.Sample {
					out := make([]conntrack.Sample, len(hosts))
					var rw sync.WaitGroup
					for i, h := range hosts {
						rw.Add(1)
						go func() {
							defer rw.Done()
							smp, raw := h.readSample(ctx, iv.Timeout, flows)
							out[i] = smp
							if raw != nil && ctx.Err() == nil {
								h.last = raw
							}
						}()
					}
					rw.Wait()
					return out
				}}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ticks = sm.Run(stopCtx)
			}()
		})
	}
	// The clients are done: a sampler still running (clients that failed
	// early) stops.
	in.ClientsDone = func(time.Time) { stop() }
	timing := pair.Timings.Track(results.PhaseTraffic)
	m, err := iperf3.Run(ctx, in)
	timing()
	stop()
	wg.Wait()
	cr.EvidenceFile = pair.saveIperfEvidence("iperf3/"+id, m)
	pair.saveClientLooks("iperf3/"+id, m)
	for _, w := range m.Warnings {
		pair.Logf("%s: %s", id, w)
	}
	if err != nil {
		cr.Error = err.Error()
		pair.Logf("%s FAILED: %v", id, err)
	} else {
		cr.DeliveredBps, cr.Retransmits, cr.Iperf3Version = m.Result.DeliveredBps, m.Result.Retransmits, m.Result.Version
	}
	if hosts != nil {
		cr.Hosts = pair.connectionHostResults(id, cr.Opened, cc.OffloadWait, hosts, ticks)
	}
	pair.Logf("%s: %s", id, connectionLine(cr))
	if werr := pair.Results.PutConnection(cr); werr != nil && err == nil {
		err = werr
	}
	return cr, err
}

// saveClientLooks keeps, beside each process's JSON (saveIperfEvidence's
// names), the look at its client taken at its bound before the kill
// (iperf3.LookCommand's raw output), and says where it is.
func (pair *Pair) saveClientLooks(base string, m iperf3.Measurement) {
	for i, pr := range m.Processes {
		if pr.ClientLook == nil {
			continue
		}
		name := fmt.Sprintf("%s-p%d-client-look.txt", base, i+1)
		if rel, err := pair.SaveArtifact(name, pr.ClientLook); err != nil {
			pair.Logf("saving %s: %v", name, err)
		} else {
			pair.Logf("%s: the look at client %d of %d (port %d) at its bound: %s", base, i+1, len(m.Processes), pr.Port, rel)
		}
	}
}

// capWords is the log's words for a per-connection cap ("" when unlimited).
func capWords(bps int64) string {
	if bps <= 0 {
		return ""
	}
	return fmt.Sprintf(" at %s each (-b)", results.FormatBps(float64(bps)))
}

// connectionHostResults summarizes each hypervisor's kept samples and
// saves them (and the last table read) as evidence.
func (pair *Pair) connectionHostResults(id string, opened int, wait time.Duration, hosts []*ctHost, ticks []conntrack.Tick) []results.ConnectionHost {
	kept := conntrack.Kept(ticks)
	dropped := 0
	for _, t := range ticks {
		if t.Dropped {
			dropped++
		}
	}
	var out []results.ConnectionHost
	for i, h := range hosts {
		var smp []conntrack.Sample
		if i < len(kept) {
			smp = kept[i]
		}
		o := conntrack.Summarize(smp, opened, wait)
		ch := results.ConnectionHost{Hypervisor: h.name, Source: o.Source, Found: o.Found, Offloaded: o.Hardware,
			Share: o.Share, Samples: o.Samples, Reason: o.Reason}
		if o.TimeToOffload != nil {
			v := o.TimeToOffload.Seconds()
			ch.TimeToOffloadSeconds = &v
		}
		if o.Fill != nil {
			ch.TableCount, ch.TableMax = o.Fill.Count, o.Fill.Max
		}
		if dropped > 0 {
			ch.Reason += fmt.Sprintf("; %d read(s) ended after the omit period and were dropped", dropped)
		}
		base := fmt.Sprintf("connections/%s-%s", id, safeName(h.name))
		if b, err := json.MarshalIndent(smp, "", "  "); err == nil {
			if rel, err := pair.SaveArtifact(base+"-samples.json", b); err == nil {
				ch.SamplesFile = rel
			} else {
				pair.Logf("%s: samples of %s not saved: %v", id, h.name, err)
			}
		}
		if h.last != nil {
			if _, err := pair.SaveArtifact(base+"-last-table.txt", h.last); err != nil {
				pair.Logf("%s: the last table of %s not saved: %v", id, h.name, err)
			}
		}
		out = append(out, ch)
	}
	return out
}

// safeName keeps a hypervisor name usable as a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\\' {
			return '_'
		}
		return r
	}, s)
}

// connectionLine is the console summary of a connection-scale result.
func connectionLine(cr results.ConnectionResult) string {
	parts := []string{fmt.Sprintf("%d connections opened (%d streams, %d control), delivered %s", cr.Opened, cr.N, cr.Processes, results.FormatBps(cr.DeliveredBps))}
	if cr.NotApplicable != "" {
		parts = append(parts, "offloaded share "+cr.NotApplicable)
	}
	for _, h := range cr.Hosts {
		parts = append(parts, fmt.Sprintf("%s: %s", h.Hypervisor, h.Reason))
	}
	return strings.Join(parts, "; ")
}
