package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Issue 38 items 4 and 5: the aging and fragment profiles. Both run their
// flows in an evidence window of their own (evidence.Family): the aging
// profile's first flow with the dpctl and tc checks, the fragment
// profile's flow with the fragment judges.

// AgingProfile is the aging profile's UDP flow: one stream at bitrate from
// the pinned client port.
func AgingProfile(bitrate int64, clientPort int) iperf3.Profile {
	return iperf3.Profile{ID: results.AgingProfileID, Name: fmt.Sprintf("UDP from client port %d at %s (aging)", clientPort, results.FormatBps(float64(bitrate))),
		Row: results.AgingProfileID, Protocol: iperf3.UDP, Streams: 1, BitratePerStream: bitrate, ClientPort: clientPort}
}

// FragmentProfile is the fragment profile's UDP flow: one stream of
// length-byte datagrams at bitrate.
func FragmentProfile(length int, bitrate int64) iperf3.Profile {
	return iperf3.Profile{ID: results.FragmentsProfileID, Name: fmt.Sprintf("UDP %d-byte datagrams at %s (fragments)", length, results.FormatBps(float64(bitrate))),
		Row: results.FragmentsProfileID, Protocol: iperf3.UDP, Streams: 1, BitratePerStream: bitrate, Length: length}
}

// familyChecks are the checks of offload.checks a family runs: those of
// want, in offload.checks' order.
func familyChecks(cfg *config.Config, want ...string) []string {
	var out []string
	for _, c := range cfg.Offload.Checks {
		if slices.Contains(want, c) {
			out = append(out, c)
		}
	}
	return out
}

// pairReady refuses a profile on a damaged or unbuilt topology.
func (pair *Pair) pairReady(id string) error {
	if err := pair.notRunOnDamage(id); err != nil {
		return err
	}
	if pair.Topology == nil || len(pair.Topology.Servers) < 2 || len(pair.Guests) < 2 {
		return fmt.Errorf("%s: no guest pair to run between (the topology is not built)", id)
	}
	return nil
}

// RunFragments runs the fragment profile: UDP datagrams above the tenant
// network's MTU (Neutron's), the tc and dpctl checks of offload.checks
// judged by the fragment judges during one evidence window. The result is
// written into the results file before it returns. A length that would
// not fragment is refused before any traffic.
func (pair *Pair) RunFragments(ctx context.Context) (_ results.FragmentResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	cfg := pair.run.Config
	fr := results.FragmentResult{Path: cfg.Run.ExpectedPath, BitrateBps: cfg.Fragments.Bitrate, StartedAt: time.Now().UTC()}
	if err != nil {
		return fr, err
	}
	defer func() { err = end(err) }()
	stop := pair.Timings.Track(results.PhaseChecks)
	defer stop()
	fail := func(err error) (results.FragmentResult, error) {
		fr.Error = err.Error()
		if werr := pair.Results.PutFragments(fr); werr != nil {
			err = errors.Join(err, werr)
		}
		return fr, err
	}
	if err := pair.pairReady(results.FragmentsProfileID); err != nil {
		return fail(err)
	}
	fr.MTU = pair.Topology.Network.MTU
	if fr.MTU <= 0 {
		return fail(errors.New("fragments: Neutron reported no MTU for the data network: the datagram size cannot be chosen above it"))
	}
	length, why := cfg.Fragments.FragmentLength(fr.MTU)
	fr.Length = length
	if why != "" {
		return fail(errors.New("fragments: " + why))
	}
	w := pair.evidenceWindow()
	w.Family = &evidence.Family{Dir: results.FragmentsProfileID, Profiles: []iperf3.Profile{FragmentProfile(length, cfg.Fragments.Bitrate)},
		Checks: familyChecks(cfg, results.CheckTC, results.CheckDpctl), Fragments: true}
	w.Record = func([]evidence.FlowCheck) error { return nil } // kept in the fragment result below
	pair.Logf("fragments: %d-byte UDP datagrams on MTU %d at %s, checks %s", length, fr.MTU, results.FormatBps(float64(cfg.Fragments.Bitrate)), strings.Join(w.Family.Checks, ", "))
	fcs, werr := evidence.Run(ctx, w)
	fr = SummarizeFragments(fr, fcs)
	pair.Logf("fragments: %s", fr.Reason)
	if werr != nil {
		fr.Error = werr.Error()
	}
	if perr := pair.Results.PutFragments(fr); perr != nil {
		werr = errors.Join(werr, perr)
	}
	return fr, werr
}

// SummarizeFragments fills a fragment result from its window's checks:
// each check's finding; fragmented when one saw the pair's fragment flows
// count; the label only when every check that saw them saw them in
// software; the unfragmented flows' verdict the worst of the checks'
// (software, then inconclusive, then offloaded). A check without a
// finding (it could not finish) is inconclusive with its reason.
func SummarizeFragments(fr results.FragmentResult, fcs []evidence.FlowCheck) results.FragmentResult {
	fr.Checks, fr.Fragmented, fr.Label = nil, false, ""
	labelled, contradicted := 0, 0
	rank := map[results.Verdict]int{results.VerdictOffloaded: 0, results.VerdictInconclusive: 1, results.VerdictSoftware: 2}
	fr.Verdict = ""
	for _, fc := range fcs {
		c := results.FragmentCheck{Name: fc.Check.Name, Hypervisor: fc.Hypervisor, Verdict: fc.Check.Verdict, Reason: fc.Check.Reason, EvidenceFiles: fc.Files}
		if f := fc.Check.Fragments; f != nil {
			c.Fragmented, c.Labelled, c.FragFlows, c.FragPackets, c.FragInHardware = f.Fragmented, f.Labelled, f.FragFlows, f.FragPackets, f.FragInHardware
		} else if c.Verdict != results.VerdictInconclusive {
			c.Verdict, c.Reason = results.VerdictInconclusive, "no fragment finding: "+c.Reason
		}
		if c.Fragmented {
			fr.Fragmented = true
			if c.Labelled {
				labelled++
			} else {
				contradicted++
			}
		}
		if fr.Verdict == "" || rank[c.Verdict] > rank[fr.Verdict] {
			fr.Verdict = c.Verdict
		}
		fr.Checks = append(fr.Checks, c)
	}
	if fr.Verdict == "" {
		fr.Verdict = results.VerdictInconclusive
	}
	switch {
	case len(fcs) == 0:
		fr.Reason = "no check ran"
	case !fr.Fragmented:
		fr.Reason = fmt.Sprintf("the datagrams did not fragment: %d-byte datagrams on MTU %d, but no check saw a fragment flow of the pair (frag=first/later, ip_flags frag) count packets (is the path MTU larger than Neutron says?); nothing labelled", fr.Length, fr.MTU)
	case contradicted > 0:
		fr.Reason = fmt.Sprintf("not labelled: %d checks saw the pair's fragment flows claimed in hardware, which mlx5 cannot do (match on frag first/later is not supported)", contradicted)
	default:
		fr.Label = offload.FragmentLabel
		fr.Reason = fmt.Sprintf("%s (%d checks saw them)", offload.FragmentLabel, labelled)
		if fr.Verdict != results.VerdictOffloaded {
			// Fragments in software are what any node shows, offloading or
			// not: the label proves nothing of the node.
			fr.Reason += "; the label says nothing of the node's offload (fragments are in software on any node): its unfragmented flows are what do"
		}
	}
	fr.Reason += fmt.Sprintf("; unfragmented flows of the pair: %s", fr.Verdict)
	return fr
}

// agingHost is one hypervisor the aging profile reads.
type agingHost struct {
	name     string
	runner   remote.Runner
	maxIdle  time.Duration
	source   string
	software bool
	err      error
}

// agingHosts are the pair's hypervisors with their max-idle and datapath,
// read before the first flow.
func (pair *Pair) agingHosts(ctx context.Context) []*agingHost {
	var out []*agingHost
	seen := map[string]bool{}
	for i, srv := range pair.Topology.Servers[:2] {
		h := &agingHost{name: srv.Hypervisor, maxIdle: offload.DefaultMaxIdle, source: "not read"}
		if h.name == "" {
			h.name = fmt.Sprintf("hypervisor of server %d", i)
		}
		if seen[h.name] {
			continue
		}
		seen[h.name] = true
		out = append(out, h)
		r, ok := pair.run.Hypervisors[srv.Hypervisor]
		if !ok {
			h.err = fmt.Errorf("no connection to %s", h.name)
			continue
		}
		h.runner = r
		if res, err := r.Run(ctx, offload.MaxIdleCommand); err != nil {
			h.source = "unread: " + err.Error()
		} else {
			h.maxIdle, h.source = offload.ParseMaxIdle(res.Stdout, res.Stderr, res.ExitCode)
		}
		userspace, err := userspaceDatapath(ctx, r, h.name)
		h.software, h.err = userspace || pair.run.Config.Run.ExpectedPath == results.PathBaseline, err
	}
	return out
}

// userspaceDatapath tells a hypervisor's datapath apart before any
// traffic: DpctlFlowsCommand's "flow-dump from" headers are the userspace
// datapath's (software by construction).
func userspaceDatapath(ctx context.Context, r remote.Runner, name string) (bool, error) {
	res, err := r.Run(ctx, offload.DpctlFlowsCommand)
	switch {
	case err != nil:
		return false, fmt.Errorf("%s: %w", name, err)
	case res.ExitCode != 0:
		return false, fmt.Errorf("%s: `%s` exited %d: %s", name, offload.DpctlFlowsCommand, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return strings.Contains(string(res.Stdout), "flow-dump from "), nil
}

// dump reads the host's datapath flows once.
func (h *agingHost) dump(ctx context.Context) ([]byte, []offload.DpctlFlow, error) {
	if h.err != nil {
		return nil, nil, h.err
	}
	res, err := h.runner.Run(ctx, offload.AgingDumpCommand)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", h.name, err)
	}
	if res.ExitCode != 0 {
		return res.Stdout, nil, fmt.Errorf("%s: `%s` exited %d: %s", h.name, offload.AgingDumpCommand, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	flows, err := offload.ParseDpctl(res.Stdout)
	if err != nil {
		return res.Stdout, nil, fmt.Errorf("%s: %w", h.name, err)
	}
	return res.Stdout, flows, nil
}

// AgingIdle is how long the aging profile's flow idles: the longer of
// the flowtable timeout and every max-idle, plus the margin.
func AgingIdle(a config.Aging, maxIdles ...time.Duration) time.Duration {
	idle := a.FlowtableTimeout
	for _, m := range maxIdles {
		idle = max(idle, m)
	}
	return idle + a.IdleMargin
}

// tupleOf is the 5-tuple an iperf3 client's JSON reports for its one stream.
func tupleOf(clientJSON []byte) (offload.Tuple, error) {
	s, err := iperf3.Connected(clientJSON)
	if err != nil {
		return offload.Tuple{}, err
	}
	if len(s.Ports) != 1 {
		return offload.Tuple{}, fmt.Errorf("iperf3 reported %d streams, the aging flow is one", len(s.Ports))
	}
	return offload.Tuple{Proto: 17, Src: s.Client, Dst: s.Server, SrcPort: int(s.Ports[0]), DstPort: int(s.ServerPort)}, nil
}

// RunAging runs the aging profile: the first flow in an evidence window of
// its own (the dpctl and tc checks of offload.checks), the idle (nothing
// runs), one dump per hypervisor (aged out or not), then the same 5-tuple
// again with each hypervisor's datapath dumped every
// intervals.aging_sample.poll until its timeout; the times until the
// tuple's flows were back in the datapath and in hardware are judged by
// offload.JudgeReinstall. The result is written into the results file
// before it returns. A flow that did not age out, or a restart of another
// 5-tuple, is "not an aging measurement", never a time.
func (pair *Pair) RunAging(ctx context.Context) (_ results.AgingResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	cfg := pair.run.Config
	ac := cfg.Aging
	iv := cfg.Interval(config.IntervalAgingSample)
	ar := results.AgingResult{Path: cfg.Run.ExpectedPath, StartedAt: time.Now().UTC(), RestartDurationSeconds: ac.RestartDuration.Seconds(), BitrateBps: ac.Bitrate,
		FlowtableTimeoutSeconds: ac.FlowtableTimeout.Seconds(), IdleMarginSeconds: ac.IdleMargin.Seconds(), SampleSeconds: iv.Poll.Seconds(), BoundSeconds: iv.Timeout.Seconds()}
	if err != nil {
		return ar, err
	}
	defer func() { err = end(err) }()
	stop := pair.Timings.Track(results.PhaseChecks)
	defer stop()
	fail := func(err error) (results.AgingResult, error) {
		ar.Error = err.Error()
		if werr := pair.Results.PutAging(ar); werr != nil {
			err = errors.Join(err, werr)
		}
		return ar, err
	}
	if err := pair.pairReady(results.AgingProfileID); err != nil {
		return fail(err)
	}
	hosts := pair.agingHosts(ctx)
	var idles []time.Duration
	for _, h := range hosts {
		idles = append(idles, h.maxIdle)
		pair.Logf("aging: %s: max-idle %s (%s)", h.name, h.maxIdle, h.source)
	}
	idle := AgingIdle(ac, idles...)
	ar.IdleSeconds = idle.Seconds()

	// The first flow, with the checks.
	p := AgingProfile(ac.Bitrate, ac.ClientPort)
	w := pair.evidenceWindow()
	w.Family = &evidence.Family{Dir: results.AgingProfileID, Profiles: []iperf3.Profile{p}, Checks: familyChecks(cfg, results.CheckTC, results.CheckDpctl)}
	w.Record = func([]evidence.FlowCheck) error { return nil } // kept in the aging result
	var firstJSON []byte
	save := w.Save
	w.Save = func(rel string, data []byte) (string, error) {
		// The last attempt's (a UDP setup retry runs the window again).
		if strings.HasSuffix(rel, "-p1-client.json") {
			firstJSON = append([]byte(nil), data...)
		}
		return save(rel, data)
	}
	pair.Logf("aging: first flow %s, checks %s", p.Name, strings.Join(w.Family.Checks, ", "))
	fcs, werr := evidence.Run(ctx, w)
	ar.Checks = evidence.CheckResults(fcs)
	if werr != nil {
		return fail(fmt.Errorf("aging: the first flow: %w", werr))
	}
	first, terr := tupleOf(firstJSON)
	if terr != nil {
		return fail(fmt.Errorf("aging: the first flow's 5-tuple: %w", terr))
	}
	ar.Tuple = first.String()
	if first.SrcPort != ac.ClientPort {
		ar.Verdict, ar.Reason = results.AgingNotMeasured, fmt.Sprintf("the first flow left from client port %d, not the pinned %d (iperf3 --cport not honoured)", first.SrcPort, ac.ClientPort)
	}

	serverMAC, clientMAC := pair.Topology.Servers[0].DataMAC, pair.Topology.Servers[1].DataMAC
	// Just after the first flow, before the idle: its flows must be there.
	installed := make([]bool, len(hosts))
	ar.Hosts = make([]results.AgingHost, len(hosts))
	for i, h := range hosts {
		ah := results.AgingHost{Hypervisor: h.name, MaxIdleSeconds: h.maxIdle.Seconds(), MaxIdleSource: h.source, Software: h.software}
		raw, flows, err := h.dump(ctx)
		if rel, serr := pair.SaveArtifact(fmt.Sprintf("%s/before-idle/%s-dpctl.txt", results.AgingProfileID, h.name), raw); serr == nil {
			ah.EvidenceFiles = append(ah.EvidenceFiles, rel)
		}
		if err != nil {
			ah.BeforeIdle = "not read: " + err.Error()
		} else {
			installed[i], ah.BeforeIdle = offload.JudgeBeforeIdle(flows, clientMAC, serverMAC, first)
		}
		pair.Logf("aging: %s before the idle: %s", h.name, ah.BeforeIdle)
		ar.Hosts[i] = ah
	}

	// The idle: nothing runs.
	pair.Logf("aging: idling %s (the longer of aging.flowtable_timeout %s and the max-idle read, plus aging.idle_margin %s)", idle, ac.FlowtableTimeout, ac.IdleMargin)
	if err := wait.Sleep(ctx, idle); err != nil {
		return fail(fmt.Errorf("aging: the idle: %w", err))
	}
	for i, h := range hosts {
		ah := &ar.Hosts[i]
		if !installed[i] {
			ah.AgedOutReason = ah.BeforeIdle
			continue
		}
		raw, flows, err := h.dump(ctx)
		if rel, serr := pair.SaveArtifact(fmt.Sprintf("%s/after-idle/%s-dpctl.txt", results.AgingProfileID, h.name), raw); serr == nil {
			ah.EvidenceFiles = append(ah.EvidenceFiles, rel)
		}
		if err != nil {
			ah.AgedOutReason = "not read: " + err.Error()
		} else {
			a := offload.JudgeAgedOut(flows, clientMAC, serverMAC, first, idle)
			ah.AgedOut, ah.AgedOutReason = a.Aged, a.Reason
		}
		pair.Logf("aging: %s after the idle: %s", h.name, ah.AgedOutReason)
	}

	// The restart, the same 5-tuple, read every poll.
	in := pair.iperfInput(p, ac.RestartDuration)
	started := make(chan time.Time, 1)
	in.ClientsStarting = func(t time.Time) {
		select {
		case started <- t:
		default:
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct {
		m   iperf3.Measurement
		err error
	}, 1)
	go func() {
		m, err := iperf3.Run(rctx, in)
		done <- struct {
			m   iperf3.Measurement
			err error
		}{m, err}
	}()
	var t0 time.Time
	select {
	case t0 = <-started:
	case r := <-done:
		return fail(fmt.Errorf("aging: the restart ended before its client started: %w", r.err))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	timelines := make([][]offload.AgingSample, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timelines[i] = pair.agingTimeline(rctx, h, t0, iv)
		}()
	}
	wg.Wait()
	r := <-done
	SaveIperfAging(pair, r.m)
	if r.err != nil {
		return fail(fmt.Errorf("aging: the restart: %w", r.err))
	}
	restart, terr := tupleOf(firstClientJSON(r.m))
	if terr != nil {
		return fail(fmt.Errorf("aging: the restart's 5-tuple: %w", terr))
	}
	ar.RestartTuple = restart.String()
	notSame := offload.SameTuple(first, restart)
	ar.SameTuple = notSame == ""
	for i, h := range hosts {
		ah := &ar.Hosts[i]
		if !ah.AgedOut {
			ah.Reason = "no times: " + ah.AgedOutReason
			continue
		}
		rin := offload.ReinstallInput{Samples: timelines[i], ClientMAC: clientMAC, ServerMAC: serverMAC, Tuple: first, Software: h.software, Network: cfg.Network.Type}
		re := offload.JudgeReinstall(rin)
		ms := func(d *time.Duration) *float64 {
			if d == nil {
				return nil
			}
			v := float64(d.Microseconds()) / 1000
			return &v
		}
		ah.ReinstallMs, ah.ReinstallResolutionMs = ms(re.InDatapath), ms(re.InDatapathResolution)
		ah.ReoffloadMs, ah.ReoffloadResolutionMs, ah.ReoffloadProvenMs = ms(re.InHardware), ms(re.InHardwareResolution), ms(re.Proven)
		ah.Reason = re.Reason
		pair.Logf("aging: %s after the restart: %s", h.name, re.Reason)
	}
	ar.Verdict, ar.Reason = AgingVerdict(ar, notSame)
	pair.Logf("aging: %s: %s", ar.Verdict, ar.Reason)
	if werr := pair.Results.PutAging(ar); werr != nil {
		return ar, werr
	}
	return ar, nil
}

// AgingVerdict is the aging result's verdict: measured when every
// hypervisor saw the flow age out and the restart was the same 5-tuple
// (notSame "", offload.SameTuple), else not an aging measurement with
// every reason.
func AgingVerdict(ar results.AgingResult, notSame string) (string, string) {
	var why []string
	if ar.Verdict == results.AgingNotMeasured && ar.Reason != "" {
		why = append(why, ar.Reason)
	}
	if notSame != "" {
		why = append(why, notSame)
	}
	for _, h := range ar.Hosts {
		if !h.AgedOut {
			why = append(why, h.Hypervisor+": "+h.AgedOutReason)
		}
	}
	if len(ar.Hosts) == 0 {
		why = append(why, "no hypervisor was read")
	}
	if len(why) > 0 {
		return results.AgingNotMeasured, strings.Join(why, "; ")
	}
	var parts []string
	for _, h := range ar.Hosts {
		parts = append(parts, h.Hypervisor+": "+h.Reason)
	}
	reason := fmt.Sprintf("%s idled %.0f s and aged out on every hypervisor; the same 5-tuple again: %s", ar.Tuple, ar.IdleSeconds, strings.Join(parts, "; "))
	// A re-offload presumes an offload: on an asap2 run the first flow's
	// checks that did not say offloaded are named (the times stand: they
	// are the restart's own).
	if ar.Path == results.PathASAP2 {
		var not []string
		for _, c := range ar.Checks {
			if c.Verdict != results.VerdictOffloaded {
				not = append(not, fmt.Sprintf("%s %s", c.Name, c.Verdict))
			}
		}
		if len(not) > 0 {
			reason += "; the first flow was not proven offloaded (" + strings.Join(not, ", ") + "): the re-offload is measured against a flow that may never have been in hardware"
		}
	}
	return results.AgingMeasured, reason
}

// agingTimeline dumps h's datapath every iv.Poll from t0 until iv.Timeout,
// each dump's start and end from t0; every dump is kept as evidence.
func (pair *Pair) agingTimeline(ctx context.Context, h *agingHost, t0 time.Time, iv config.Interval) []offload.AgingSample {
	var out []offload.AgingSample
	for n := 0; time.Since(t0) < iv.Timeout; n++ {
		if n > 0 {
			if err := wait.Sleep(ctx, iv.Poll); err != nil {
				break
			}
		}
		start := time.Since(t0)
		raw, flows, err := h.dump(ctx)
		endAt := time.Since(t0)
		if _, serr := pair.SaveArtifact(fmt.Sprintf("%s/restart/%s/dpctl-%03d.txt", results.AgingProfileID, h.name, n),
			fmt.Appendf(raw, "# dump %d: sent %s, answered %s after the restarted client's launch\n", n, start, endAt)); serr != nil {
			pair.Logf("aging: saving a dump: %v", serr)
		}
		if err != nil {
			pair.Logf("aging: %s: %v", h.name, err)
			if ctx.Err() != nil || h.err != nil {
				break
			}
			continue
		}
		out = append(out, offload.AgingSample{Start: start, End: endAt, Flows: flows})
	}
	return out
}

// firstClientJSON is the first process's client JSON of a measurement.
func firstClientJSON(m iperf3.Measurement) []byte {
	if len(m.Processes) == 0 {
		return nil
	}
	return m.Processes[0].ClientJSON
}

// SaveIperfAging keeps the restart's raw iperf3 output.
func SaveIperfAging(pair *Pair, m iperf3.Measurement) {
	evidence.SaveIperf(pair.SaveArtifact, pair.Logf, results.AgingProfileID+"/restart/iperf3", m)
}
