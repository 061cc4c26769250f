package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// iperfInput is one iperf3 run between the pair: Guests[0] serves on its
// data address, Guests[1] sends.
func (pair *Pair) iperfInput(p iperf3.Profile, duration time.Duration) iperf3.RunInput {
	iv := pair.run.Config.Interval(config.IntervalIperfServer)
	return iperf3.RunInput{
		Server:               pair.Guests[0],
		Client:               pair.Guests[1],
		ServerAddr:           pair.Topology.Servers[0].DataIP,
		Profile:              p,
		Duration:             duration,
		Omit:                 pair.run.Config.Traffic.Omit,
		BasePort:             pair.run.Config.Traffic.Port,
		MaxStreamsPerProcess: pair.run.Config.Traffic.MaxStreamsPerProcess,
		GuestVCPUs:           pair.Topology.Flavor.VCPUs,
		ListenTimeout:        iv.Timeout,
		ListenPoll:           iv.Poll,
		StallTimeout:         pair.run.Config.Traffic.StallTimeout,
	}
}

// RunProfile runs profile p traffic.repeats times, saves every raw iperf3
// output under iperf3/, and writes the profile into the results file before
// it returns (so a later crash keeps it). It returns the profile's result;
// the error joins every failed repeat.
func (pair *Pair) RunProfile(ctx context.Context, p iperf3.Profile) (results.ProfileResult, error) {
	return pair.runProfile(ctx, p, nil)
}

// runProfile is RunProfile with each repeat's measured window at gate g
// (a concurrent fleet, gate.go; nil: alone): the window opens when every
// pair of g stands at it and closes when every pair's clients returned.
func (pair *Pair) runProfile(ctx context.Context, p iperf3.Profile, g *Gate) (_ results.ProfileResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	if err != nil {
		return results.ProfileResult{ID: p.ID, Name: p.Name}, err
	}
	defer func() { err = end(err) }()
	pr := results.ProfileResult{
		ID: p.ID, Name: p.Name, Protocol: protoName(p.Protocol), Streams: p.Streams,
		BitrateBps: float64(p.BitratePerStream), LengthBytes: p.Length,
		Path: pair.run.Config.Run.ExpectedPath, DurationSeconds: pair.run.Config.Traffic.Duration.Seconds(),
	}
	if err := pair.notRunOnDamage(p.ID); err != nil {
		return pr, err
	}
	var errs []error
	for rep := 1; rep <= pair.run.Config.Traffic.Repeats; rep++ {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if pair.damage != "" {
			pair.Logf("%s: repeats %d..%d not run: the topology is damaged (see above)", p.ID, rep, pair.run.Config.Traffic.Repeats)
			break
		}
		run := results.Run{Repeat: rep, StartedAt: time.Now().UTC()}
		stop := pair.Timings.Track(results.PhaseTraffic)
		in := pair.iperfInput(p, pair.run.Config.Traffic.Duration)
		in.UDPSetupRetries, in.UDPSetupBackoff = pair.run.Config.Traffic.UDPSetupRetries, pair.run.Config.Traffic.UDPSetupBackoff
		// The hypervisors' CPU (traffic.host_cpu): read while the servers
		// listen and no client runs, and again once every client returned.
		cpu := pair.newCPUProbe(ctx)
		// OVS's drop counters at the same two moments (drops.go).
		drops := pair.newDropProbe(ctx)
		key := roundKey(p.ID, rep)
		var gateErr error
		if g != nil {
			// A concurrent fleet: a UDP setup retry would relaunch this
			// pair's clients alone, after the other pairs' windows closed.
			in.UDPSetupRetries = 0
		}
		in.ClientsStarting = func(time.Time) {
			if cpu != nil {
				cpu.Before()
			}
			if drops != nil {
				drops.Before()
			}
			if g != nil {
				// Every pair's servers listen and its clients are built:
				// the clients of all pairs start together.
				gateErr = g.Start(ctx, key, pair.party)
			}
			// One line a person can watch, from the harness's own clock:
			// nothing polls the guests for it while the measured window runs.
			pair.Logf("%s", progressLine(p.Name, rep, pair.run.Config.Traffic.Repeats, in.Duration+in.Omit, time.Now()))
		}
		in.ClientsDone = func(time.Time) {
			if g != nil {
				// Nothing after the window (CPU readings, stopping the
				// servers) until every pair's window is over.
				if err := g.Done(ctx, key, pair.party); err != nil && gateErr == nil {
					gateErr = err
				}
			}
			if cpu != nil {
				cpu.After()
			}
			if drops != nil {
				drops.After()
			}
		}
		m, err := iperf3.Run(ctx, in)
		if g != nil {
			if lerr := g.Leave(ctx, key, pair.party); lerr != nil && gateErr == nil {
				gateErr = lerr
			}
			if err == nil && gateErr != nil {
				err = gateErr
			}
		}
		stop()
		if cpu != nil {
			run.HostCPU = cpu.Result()
		}
		run.OVSDrops = drops.Result()
		run.EvidenceFile = pair.saveIperfEvidence(fmt.Sprintf("iperf3/%s-r%d", p.ID, rep), m)
		fillAttempts(&run, m)
		for _, w := range m.Warnings {
			pair.Logf("%s repeat %d: %s", p.ID, rep, w)
		}
		if err != nil {
			pair.Logf("%s repeat %d FAILED: %v", p.Name, rep, err)
			// Once, after the window: what changed, in the failure itself
			// (the results and the report carry it with the repeat).
			err = pair.explainFailure(ctx, fmt.Sprintf("%s repeat %d", p.ID, rep), m, err)
			if line := results.DropsLine(run.OVSDrops); line != "" {
				err = fmt.Errorf("%w; %s", err, line)
			}
			run.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s repeat %d: %w", p.ID, rep, err))
		} else {
			fillRun(&run, m.Result)
			run.GuestCPU = guestCPU(m.Result)
			pair.fillPackets(&run, p.ID, m.Result)
			pair.Logf("%s repeat %d/%d: %s", p.Name, rep, pair.run.Config.Traffic.Repeats, oneLine(p, run))
		}
		if line := cpuLine(run); line != "" {
			pair.Logf("%s repeat %d: %s", p.ID, rep, line)
		}
		if line := results.DropsLine(run.OVSDrops); line != "" && run.Error == "" {
			pair.Logf("%s repeat %d: %s", p.ID, rep, line)
		}
		pr.Runs = append(pr.Runs, run)
		results.Summarize(&pr, pair.run.Config.Traffic.CVLimitPercent)
		if werr := pair.Results.PutProfile(pr); werr != nil {
			errs = append(errs, werr)
		}
	}
	return pr, errors.Join(errs...)
}

// progressLine announces a measured window: "TCP 15 streams, repeat 2/3:
// 30s, until 12:41:07" (UTC, like every line of the harness log).
func progressLine(name string, rep, repeats int, length time.Duration, start time.Time) string {
	return fmt.Sprintf("%s, repeat %d/%d: %s, until %s", name, rep, repeats, length, start.Add(length).UTC().Format("15:04:05"))
}

func protoName(p iperf3.Protocol) string {
	if p == iperf3.UDP {
		return results.ProtoUDP
	}
	return results.ProtoTCP
}

// fillAttempts records how a repeat ran, success or not: iperf3's own
// guards on its commands, and every UDP stream-setup retry.
func fillAttempts(run *results.Run, m iperf3.Measurement) {
	run.Iperf3Guards = m.Guards.String()
	for _, r := range m.SetupRetries {
		run.SetupRetries = append(run.SetupRetries, results.Retry{At: r.At, Reason: r.Reason})
	}
}

func fillRun(run *results.Run, r iperf3.Result) {
	run.OfferedBps, run.DeliveredBps = r.OfferedBps, r.DeliveredBps
	run.LossPercent, run.Retransmits = r.LossPercent, r.Retransmits
	run.Iperf3Version = r.Version
	for _, iv := range r.DeliveredIntervals() {
		if iv.Omitted {
			continue
		}
		run.Intervals = append(run.Intervals, results.Interval{Start: iv.Start, End: iv.End, Bps: iv.Bps})
	}
	run.IntervalStats = results.IntervalStatsOf(run.Intervals)
}

// oneLine is the console summary of one repeat in the seed's wording.
func oneLine(p iperf3.Profile, run results.Run) string {
	if p.Protocol == iperf3.UDP {
		return "offered / delivered / loss " + results.UDPCell(run.OfferedBps, run.DeliveredBps, run.LossPercent)
	}
	return fmt.Sprintf("goodput %s, %d retransmits", results.FormatBps(run.DeliveredBps), run.Retransmits)
}
