package harness

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// ChurnProfile is the churn window's steady flow: one UDP stream at
// churn.bitrate with churn.length datagrams.
func ChurnProfile(cc config.Churn) iperf3.Profile {
	return iperf3.Profile{ID: results.ChurnProfileID, Name: fmt.Sprintf("a steady UDP flow at %s held for %s", results.FormatBps(float64(cc.Bitrate)), cc.Duration),
		Row: results.ChurnProfileID, Protocol: iperf3.UDP, Streams: 1, BitratePerStream: cc.Bitrate, Length: cc.Length, Table: TableHold}
}

// TableHold is the iperf3 table of issue 38's windows (never a
// throughput table: the hypervisors are read during them).
const TableHold iperf3.Table = "Offload that holds"

// churnReads is one hypervisor's reads of the window.
type churnReads struct {
	samples []offload.ChurnSample
	errs    []string
	// tc are the representor's tc rules of the pair at the same reads
	// (offload.TCChurnFlows), with the read's coverage; tcErr the last
	// tc read that failed.
	tc    []offload.ChurnSample
	tcErr string
}

// RunChurn runs the churn window: one steady UDP flow for churn.duration
// (iperf3, ChurnProfile) while each hypervisor of the pair is read every
// intervals.churn_sample.poll from the clients' start (dpctl/dump-flows -m
// for the pair's UDP flows, coverage/show, the representor's counters),
// then each hypervisor's reads judged by offload.JudgeChurn. The result is
// written into the results file before it returns.
func (pair *Pair) RunChurn(ctx context.Context) (_ results.ChurnResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	cc := pair.run.Config.Churn
	iv := pair.run.Config.Interval(config.IntervalChurnSample)
	id := results.ChurnProfileID
	cr := results.ChurnResult{Path: pair.run.Config.Run.ExpectedPath, DurationSeconds: cc.Duration.Seconds(), BitrateBps: cc.Bitrate,
		LengthBytes: cc.Length, SampleSeconds: iv.Poll.Seconds(), SlowPathShare: cc.SlowPathShare, StartedAt: time.Now().UTC()}
	if err != nil {
		return cr, err
	}
	defer func() { err = end(err) }()
	if err := pair.holdReady(id); err != nil {
		cr.Error = err.Error()
		pair.put(id, pair.Results.PutChurn(cr))
		return cr, err
	}
	macs := []string{pair.Topology.Servers[0].DataMAC, pair.Topology.Servers[1].DataMAC}
	sender := pair.Topology.Servers[1].DataMAC // pair.iperfInput's client: the steady flow's direction
	hosts := pair.holdHosts(ctx)
	reads := make([]churnReads, len(hosts))
	in := pair.iperfInput(ChurnProfile(cc), cc.Duration)
	in.Omit = 0
	var (
		wg         sync.WaitGroup
		once       sync.Once
		stopCtx, s = context.WithCancel(ctx)
	)
	defer s()
	appctl := appctlSecs(iv.Timeout)
	var opened time.Time
	in.ClientsStarting = func(t time.Time) {
		opened = t
		pair.Logf("%s: one UDP flow at %s (-l %d) for %s, each hypervisor read every %s, until %s", id, results.FormatBps(float64(cc.Bitrate)), cc.Length, cc.Duration, iv.Poll, t.Add(cc.Duration).UTC().Format("15:04:05"))
		once.Do(func() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				everyPoll(stopCtx, t, iv, func(ctx context.Context, at time.Duration) {
					eachHost(hosts, func(i int, h *holdHost) {
						smp, problems := readChurn(ctx, h, macs, sender, appctl)
						tc, tcErr := readChurnTC(ctx, h, macs, sender)
						smp.At = at
						if ctx.Err() != nil && stopCtx.Err() != nil {
							return // the window ended during the read
						}
						if tcErr != nil {
							reads[i].tcErr = tcErr.Error()
						} else {
							reads[i].tc = append(reads[i].tc, offload.ChurnSample{At: at, Flows: tc, Coverage: smp.Coverage})
						}
						if len(problems) > 0 {
							reads[i].errs = append(reads[i].errs, fmt.Sprintf("%.0f s: %s", at.Seconds(), strings.Join(problems, "; ")))
						}
						if smp.Flows != nil || len(problems) == 0 {
							reads[i].samples = append(reads[i].samples, smp)
						}
					})
				})
			}()
		})
	}
	in.ClientsDone = func(time.Time) {
		s()
		if pair.readsSpan != nil {
			pair.readsSpan(opened, time.Now())
		}
	}
	timing := pair.Timings.Track(results.PhaseChecks)
	m, err := iperf3.Run(ctx, in)
	timing()
	s()
	wg.Wait()
	cr.EvidenceFile = pair.saveIperfEvidence("iperf3/"+id, m)
	pair.saveClientLooks("iperf3/"+id, m)
	if err != nil {
		cr.Error = err.Error()
		pair.Logf("%s FAILED: %v", id, err)
	} else {
		cr.DeliveredBps, cr.LossPercent = m.Result.DeliveredBps, m.Result.LossPercent
	}
	cr.Stable = err == nil
	rules := offload.ChurnRules{SlowPathShare: cc.SlowPathShare, Period: cc.SlowPathPeriod}
	for i, h := range hosts {
		ch := pair.churnHost(id, h, reads[i], rules, cc.FlowPPS())
		cr.Stable = cr.Stable && ch.Stable
		cr.Hosts = append(cr.Hosts, ch)
		pair.Logf("%s: %s: %s", id, ch.Hypervisor, ch.Reason)
	}
	if werr := pair.Results.PutChurn(cr); werr != nil && err == nil {
		err = werr
	}
	return cr, err
}

// readChurn is one read of a hypervisor: the pair's UDP flows of the
// steady flow's direction (from sender), coverage, the representor's
// counters. What failed is named; the rest is kept (Flows nil when the
// flows could not be read).
func readChurn(ctx context.Context, h *holdHost, macs []string, sender string, appctl int) (offload.ChurnSample, []string) {
	var smp offload.ChurnSample
	var problems []string
	flows, err := h.pairFlows(ctx, macs, "udp")
	if err != nil {
		problems = append(problems, err.Error())
	} else {
		smp.Flows = append([]offload.DpctlFlow{}, offload.FromMAC(flows, sender)...)
	}
	if c, err := h.coverage(ctx, appctl); err != nil {
		problems = append(problems, err.Error())
	} else {
		smp.Coverage = c
	}
	if n, err := h.repPackets(ctx); err != nil {
		problems = append(problems, err.Error())
	} else {
		smp.RepPackets = n
	}
	return smp, problems
}

// readChurnTC reads the representor's tc rules of the pair (flower rules
// whose source or destination MAC is the pair's) of the steady flow's
// direction (from sender).
func readChurnTC(ctx context.Context, h *holdHost, macs []string, sender string) ([]offload.DpctlFlow, error) {
	if h.rep == "" {
		return nil, fmt.Errorf("%s: no representor: %s", h.name, h.repErr)
	}
	out, err := h.run(ctx, offload.TCCommand(h.rep))
	if err != nil {
		return nil, err
	}
	d, err := offload.ParseTC(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	flows, err := offload.PairFlows(offload.TCChurnFlows(d), macs, "")
	return offload.FromMAC(flows, sender), err
}

// churnTC judges the representor's tc rules beside the datapath flows:
// only where some read found one (a software datapath has none).
func churnTC(r churnReads, in offload.ChurnInput, ch *results.ChurnHost) {
	seen := false
	for _, s := range r.tc {
		seen = seen || len(s.Flows) > 0
	}
	switch {
	case !seen && r.tcErr != "":
		ch.TCReason = "not judged: " + clipLine(r.tcErr)
		return
	case !seen:
		ch.TCReason = fmt.Sprintf("not judged: no tc rule of the pair on the representor in %d reads", len(r.tc))
		return
	}
	in.Samples, in.FlowPPS, in.Software = r.tc, 0, true // the slow path is the flows' judgement's
	c, err := offload.JudgeChurn(in)
	if err != nil {
		ch.TCReason = "not judged: " + err.Error()
		return
	}
	n := c.Count
	ch.TCChurnCount = &n
	// The statement less its slow path, which is the flows' judgement's.
	ch.TCReason = c.Statement
	if i, j := strings.Index(c.Statement, "; slow path"), strings.Index(c.Statement, "; coverage:"); i >= 0 && j > i {
		ch.TCReason = c.Statement[:i] + c.Statement[j:]
	}
	ch.Count = max(ch.Count, c.Count)
	ch.Stable = ch.Stable && c.Count == 0
	for _, e := range c.Events {
		ch.TCEvents = append(ch.TCEvents, results.ChurnEvent{Kind: string(e.Kind), AfterSeconds: e.After.Seconds(), BeforeSeconds: e.Before.Seconds(),
			Counted: e.Counted, Flow: e.Flow, Detail: e.Detail})
	}
}

// churnHost judges one hypervisor's reads and saves them as evidence.
func (pair *Pair) churnHost(id string, h *holdHost, r churnReads, rules offload.ChurnRules, pps float64) results.ChurnHost {
	ch := results.ChurnHost{Hypervisor: h.name, Software: h.userspace, Deleted: -1, Reads: len(r.samples)}
	ch.ReadMeanMS, ch.ReadMaxMS = h.costMS()
	ch.SamplesFile = pair.saveReads(fmt.Sprintf("churn/%s-%s-reads.json", id, safeName(h.name)), r.samples)
	if h.err != nil {
		ch.Reason = "not read: " + h.err.Error()
		return ch
	}
	in := offload.ChurnInput{Samples: r.samples, FlowPPS: pps, Software: h.userspace, OVSVersion: h.ovs, Rules: rules}
	c, err := offload.JudgeChurn(in)
	if err != nil {
		ch.Reason = err.Error()
		if len(r.errs) > 0 {
			ch.Reason += "; reads that failed: " + strings.Join(r.errs, " | ")
		}
		return ch
	}
	ch.Stable, ch.Count, ch.Flows = c.Stable, c.Count, c.Flows
	ch.SlowPathMax, ch.SlowPathOver, ch.SlowPathNote, ch.BlindSpot = c.SlowPathMax, c.SlowPathOver, c.SlowPathNote, c.BlindSpot
	if c.HasCoverage {
		ch.Deleted = int64(c.Deleted)
	}
	for _, e := range c.Events {
		ch.Events = append(ch.Events, results.ChurnEvent{Kind: string(e.Kind), AfterSeconds: e.After.Seconds(), BeforeSeconds: e.Before.Seconds(),
			Counted: e.Counted, Flow: e.Flow, Detail: e.Detail})
	}
	ch.Reason = c.Statement
	churnTC(r, in, &ch)
	ch.Reason += "; tc rules: " + ch.TCReason
	if len(r.errs) > 0 {
		ch.Reason += fmt.Sprintf("; %d read(s) incomplete: %s", len(r.errs), strings.Join(r.errs[:min(3, len(r.errs))], " | "))
	}
	ch.Reason += fmt.Sprintf("; the reads cost %.0f ms on average, %.0f ms at most", ch.ReadMeanMS, ch.ReadMaxMS)
	return ch
}
