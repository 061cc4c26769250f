package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/sockperf"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

func (pair *Pair) sockperfInput() sockperf.RunInput {
	iv := pair.run.Config.Interval(config.IntervalIperfServer)
	l := pair.run.Config.Latency
	return sockperf.RunInput{
		Server: pair.Guests[0], Client: pair.Guests[1], ServerAddr: pair.Topology.Servers[0].DataIP,
		Port: l.Port, MessageSize: l.MessageSize, Duration: l.Duration, Grace: l.Grace,
		ListenTimeout: iv.Timeout, ListenPoll: iv.Poll,
	}
}

// RunLatency runs one latency profile between the pair (Guests[0] answers
// on its data address, Guests[1] measures) and writes its result into the
// results file before it returns. Nothing polls a guest or a hypervisor
// while its measured window runs: servers are started and seen listening
// before, evidence is saved after.
func (pair *Pair) RunLatency(ctx context.Context, shape results.LatencyShape) (_ results.LatencyResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	if err != nil {
		return results.LatencyResult{ID: shape.ID}, err
	}
	defer func() { err = end(err) }()
	l := pair.run.Config.Latency
	lr := results.LatencyResult{ID: shape.ID, Name: shape.Name, Kind: shape.Kind, Path: pair.run.Config.Run.ExpectedPath,
		StartedAt: time.Now().UTC()}
	if err := pair.notRunOnDamage(shape.ID); err != nil {
		return lr, err
	}
	stop := pair.Timings.Track(results.PhaseTraffic)
	switch shape.Kind {
	case results.LatencyPingPong:
		err = pair.pingPong(ctx, &lr, false)
	case results.LatencyUnderLoad:
		err = pair.pingPong(ctx, &lr, true)
	case results.LatencyFirstPacket:
		err = pair.firstPacket(ctx, &lr)
	default:
		err = fmt.Errorf("latency profile %s: unknown kind %q", shape.ID, shape.Kind)
	}
	stop()
	if err != nil {
		lr.Error = err.Error()
		pair.Logf("%s FAILED: %v", shape.Name, err)
	} else if lr.Kind == results.LatencyFirstPacket {
		f := lr.First
		pair.Logf("%s: first packet median %s, max %s over %d flows (%d first echoes lost); steady state p50 %s (%.1f×)", shape.Name,
			results.FormatMicros(f.FirstMedianUs), results.FormatMicros(f.FirstMaxUs), f.Flows, f.FirstLost, results.FormatMicros(f.SteadyP50Us), f.Ratio())
	} else {
		pair.Logf("%s: round trip p50 %s, p99 %s, p99.9 %s, max %s (%d samples, %d-byte messages, %s)", shape.Name,
			results.FormatMicros(lr.P50Us), results.FormatMicros(lr.P99Us), results.FormatMicros(lr.P999Us), results.FormatMicros(lr.MaxUs),
			lr.Samples, l.MessageSize, l.Duration)
	}
	for _, w := range lr.Warnings {
		pair.Logf("%s: %s", shape.ID, w)
	}
	if werr := pair.Results.PutLatency(lr); werr != nil {
		err = errors.Join(err, werr)
	}
	return lr, err
}

// pingPong runs sockperf ping-pong, alone or beside the load.
func (pair *Pair) pingPong(ctx context.Context, lr *results.LatencyResult, underLoad bool) error {
	l := pair.run.Config.Latency
	lr.Protocol, lr.MessageBytes, lr.DurationSeconds = "udp", l.MessageSize, l.Duration.Seconds()
	in := pair.sockperfInput()
	in.ClientStarting = func(t time.Time) {
		pair.Logf("%s: sockperf ping-pong, %s, until %s", lr.Name, l.Duration, t.Add(l.Duration).UTC().Format("15:04:05"))
	}
	var m sockperf.Measurement
	var err error
	if underLoad {
		m, err = pair.underLoad(ctx, lr, in)
	} else {
		// OVS's drop counters before the server starts and after the
		// client returned (drops.go): a ping-pong that lost a message
		// (sockperf.LostMessageError) then says which OVS dropped it, if one did.
		drops := pair.newDropProbe(ctx)
		if drops != nil {
			drops.Before()
		}
		m, err = sockperf.Run(ctx, in)
		if drops != nil {
			drops.After()
		}
		lr.OVSDrops = drops.Result()
		if line := results.DropsLine(lr.OVSDrops); line != "" {
			switch {
			case err != nil:
				err = fmt.Errorf("%w; %s", err, line)
			case m.LostFirst != nil:
				m.Warnings = append(m.Warnings, "the lost message: "+line)
			default:
				pair.Logf("%s: %s", lr.Name, line)
			}
		}
	}
	if m.ClientVersion != "" {
		lr.Tool = "sockperf " + m.ClientVersion
	}
	lr.Warnings = append(lr.Warnings, m.Warnings...)
	if len(m.ClientOutput) > 0 {
		var b bytes.Buffer
		fmt.Fprintf(&b, "# %s (client %s)\n# server: %s\n", m.ClientCmd, pair.Guests[1].Name(), m.ServerCmd)
		b.Write(m.ClientOutput)
		if rel, serr := pair.SaveArtifact("latency/"+lr.ID+".txt", b.Bytes()); serr == nil {
			lr.EvidenceFile = rel
		}
	}
	if err != nil {
		return err
	}
	r := m.Result
	lr.Samples, lr.SentMessages, lr.RunTimeSeconds = r.Observations, r.SentMessages, r.RunTimeSeconds
	lr.P50Us, lr.P99Us, lr.P999Us, lr.MaxUs, lr.MinUs, lr.AvgUs = r.P50(), r.P99(), r.P999(), r.MaxUs, r.MinUs, r.AvgUs
	lr.Dropped, lr.Duplicated, lr.OutOfOrder = r.Dropped, r.Duplicated, r.OutOfOrder
	return nil
}

// underLoad starts the sockperf server, then the iperf3 load, waits
// latency.settle from the moment the load's clients start, runs the
// ping-pong and waits for the load to end; the load's own result is
// recorded in lr.Load. The ping-pong must end before the load does.
func (pair *Pair) underLoad(ctx context.Context, lr *results.LatencyResult, in sockperf.RunInput) (sockperf.Measurement, error) {
	l := pair.run.Config.Latency
	var load iperf3.Profile
	for _, p := range iperf3.Catalogue() {
		if p.ID == l.LoadProfile {
			load = p
		}
	}
	if load.ID == "" {
		return sockperf.Measurement{}, fmt.Errorf("latency.load_profile %q is not an iperf3 profile", l.LoadProfile)
	}
	loadDur := plan.LoadDuration(l)
	lr.Load = &results.LatencyLoad{Profile: load.ID, DurationSeconds: loadDur.Seconds(), SettleSeconds: l.Settle.Seconds()}
	srv, err := sockperf.Start(ctx, in)
	if err != nil {
		return srv.Measurement(), err
	}
	defer srv.Stop()

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var loadEnded time.Time
	started := make(chan time.Time, 1)
	lin := pair.iperfInput(load, loadDur)
	lin.Omit = 0
	lin.ClientsStarting = func(t time.Time) {
		pair.Logf("%s: load %s (%s) for %s, sockperf after %s", lr.Name, load.ID, load.Name, loadDur, l.Settle)
		select {
		case started <- t:
		default:
		}
	}
	lin.ClientsDone = func(t time.Time) { mu.Lock(); loadEnded = t; mu.Unlock() }
	type loadResult struct {
		m   iperf3.Measurement
		err error
	}
	done := make(chan loadResult, 1)
	go func() {
		m, err := iperf3.Run(lctx, lin)
		done <- loadResult{m, err}
	}()
	// stoppedByUs is set when the harness stops the load because the
	// latency measurement failed or was cancelled: its end is then not a
	// failure of the load.
	stoppedByUs := false
	finishLoad := func(lres loadResult) error {
		lr.Load.DeliveredBps, lr.Load.OfferedBps = lres.m.Result.DeliveredBps, lres.m.Result.OfferedBps
		lr.Load.LossPercent, lr.Load.Retransmits = lres.m.Result.LossPercent, lres.m.Result.Retransmits
		lr.Load.EvidenceFile = pair.saveIperfEvidence("latency/"+lr.ID+"-load", lres.m)
		if lres.err != nil && stoppedByUs && errors.Is(lres.err, context.Canceled) {
			lr.Load.Error = "stopped by the harness: the latency measurement did not complete"
			return nil
		}
		if lres.err != nil {
			lr.Load.Error = lres.err.Error()
			return fmt.Errorf("the load %s: %w", load.ID, lres.err)
		}
		return nil
	}
	select {
	case t := <-started:
		if err := wait.Sleep(ctx, time.Until(t.Add(l.Settle))); err != nil {
			stoppedByUs = true
			cancel()
			return srv.Measurement(), errors.Join(err, finishLoad(<-done))
		}
	case lres := <-done:
		return srv.Measurement(), fmt.Errorf("the load ended before it started: %w", finishLoad(lres))
	}
	m, perr := srv.Ping(ctx)
	if perr != nil {
		stoppedByUs = true
		cancel()
	}
	lerr := finishLoad(<-done)
	mu.Lock()
	ended := loadEnded
	mu.Unlock()
	if err := errors.Join(perr, lerr); err != nil {
		return m, err
	}
	if ended.IsZero() || ended.Before(m.Ended) {
		return m, fmt.Errorf("the load %s ended at %s, before the latency window did (%s): not a measurement under load",
			load.ID, ended.UTC().Format("15:04:05.000"), m.Ended.UTC().Format("15:04:05.000"))
	}
	return m, nil
}

// firstPacket runs the first-packet profile.
func (pair *Pair) firstPacket(ctx context.Context, lr *results.LatencyResult) error {
	l := pair.run.Config.Latency
	lr.Protocol, lr.MessageBytes = "icmp", 56
	in := sockperf.FirstInput{Client: pair.Guests[1], ServerAddr: pair.Topology.Servers[0].DataIP,
		Flows: l.FirstPacketFlows, Pings: l.FirstPacketPings, IdleGap: l.FirstPacketIdle, Grace: l.Grace,
		FlowStarting: func(i int, t time.Time) {
			pair.Logf("%s: flow %d/%d after %s idle, %d echoes", lr.Name, i, l.FirstPacketFlows, l.FirstPacketIdle, l.FirstPacketPings)
		}}
	lr.Tool = "ping (" + sockperf.PingPackage + ")"
	m, err := sockperf.FirstPacket(ctx, in)
	var b bytes.Buffer
	for i, f := range m.Flows {
		fmt.Fprintf(&b, "# flow %d, %s, started %s\n", i+1, m.Cmd, f.Started.UTC().Format(time.RFC3339Nano))
		b.Write(f.Output)
	}
	if b.Len() > 0 {
		if rel, serr := pair.SaveArtifact("latency/"+lr.ID+".txt", b.Bytes()); serr == nil {
			lr.EvidenceFile = rel
		}
	}
	fp := &results.FirstPacket{Flows: len(m.Flows), IdleGapSeconds: l.FirstPacketIdle.Seconds(),
		FirstMedianUs: m.FirstMedianUs, FirstMaxUs: m.FirstMaxUs, SteadyP50Us: m.SteadyP50Us, FirstLost: m.FirstLost}
	for _, f := range m.Flows {
		fp.FirstUs = append(fp.FirstUs, f.FirstUs)
		fp.SteadySamples += len(f.SteadyUs)
	}
	lr.First = fp
	lr.Samples = int64(fp.Flows - fp.FirstLost)
	if m.FirstLost > 0 {
		lr.Warnings = append(lr.Warnings, fmt.Sprintf("%d of %d fresh flows lost their first echo (no reply within %s)", m.FirstLost, len(m.Flows), sockperf.PingReplyWait))
	}
	return err
}
