package harness

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// FlowCheck is one complementary check's verdict during one flow, on one
// hypervisor.
type FlowCheck struct {
	Flow       string // flood_ping, tcp, udp
	Hypervisor string
	Check      offload.Check
	Files      []string // evidence files, relative to the run directory
}

// evidenceFlows are the sustained flows the checks observe, one after the
// other; each is the first profile of its protocol in the catalogue, run for
// offload.flow_duration, never one of the measured windows.
var evidenceFlows = []string{"tcp-p1", "udp-b0-p1"}

// representor finds the OVS interface of a Neutron port on a hypervisor
// (asked again for each flow: a port re-plugged between flows is seen).
func (s *Session) representor(ctx context.Context, hv, portID string) (string, error) {
	r, ok := s.Hypervisors[hv]
	if !ok {
		return "", fmt.Errorf("no SSH connection to hypervisor %s", hv)
	}
	name, ev, err := offload.FindRepresentor(ctx, r, portID)
	if ev.Name != "" {
		if _, serr := s.SaveArtifact(path.Join("offload", "representor-lookup", hv+"-"+ev.Name), ev.Output); serr != nil {
			s.Logf("saving evidence: %v", serr)
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s: representor of port %s: %w", hv, portID, err)
	}
	return name, nil
}

// RunOffloadChecks is the evidence window: a flood ping between the data
// addresses, then a sustained TCP flow and a sustained UDP flow, during each
// of which every configured check runs on both hypervisors. Verdicts and
// evidence files go to the results file. The returned error is for
// failures to run the window (transport, cancellation); the verdicts are
// judged by the caller with offload.ExpectPath.
func (s *Session) RunOffloadChecks(ctx context.Context) ([]FlowCheck, error) {
	stop := s.Timings.Track(results.PhaseChecks)
	defer stop()
	if len(s.Config.Offload.Checks) == 0 {
		return nil, errors.New("offload.checks is empty: nothing can prove the data path")
	}
	if err := s.notRunOnDamage("the offload checks"); err != nil {
		return nil, err
	}
	if err := s.floodPing(ctx); err != nil {
		return nil, err
	}
	var all []FlowCheck
	for _, id := range evidenceFlows {
		p, ok := iperf3.Lookup(id)
		if !ok {
			return all, fmt.Errorf("evidence flow %s is not in the catalogue", id)
		}
		got, err := s.checkDuringFlow(ctx, p, nil)
		// iperf3 sets a UDP flow up with one datagram each way and no
		// retransmission (esnet/iperf#862): on a loaded path the flow fails
		// before any traffic, and so does everything the checks sampled. The
		// whole window (flow and checks) runs again, bounded like a measured
		// run's (traffic.udp_setup_retries, traffic.udp_setup_backoff), and
		// each check's reason says so.
		var notes []string
		for attempt := 1; attempt <= s.Config.Traffic.UDPSetupRetries; attempt++ {
			var se *flowSetupError
			if !errors.As(err, &se) {
				break
			}
			notes = append(notes, fmt.Sprintf("window %d of the %s flow given up at %s: UDP stream setup failed (%s)",
				attempt, se.flow, se.at.UTC().Format("15:04:05"), se.reason))
			s.Logf("%s; the evidence window runs again in %s (%d of %d, traffic.udp_setup_retries)",
				notes[len(notes)-1], s.Config.Traffic.UDPSetupBackoff, attempt, s.Config.Traffic.UDPSetupRetries)
			if werr := wait.Sleep(ctx, s.Config.Traffic.UDPSetupBackoff); werr != nil {
				return all, werr
			}
			got, err = s.checkDuringFlow(ctx, p, notes)
		}
		all = append(all, got...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// checkUnfinished starts the reason of a check that could not finish.
const checkUnfinished = "the check did not finish: "

// flowSetupError is an evidence flow that failed at UDP stream setup,
// before any traffic (iperf3.UDPSetupFailure): the checks sampled nothing.
type flowSetupError struct {
	flow, reason string
	at           time.Time
	err          error
}

func (e *flowSetupError) Error() string {
	return fmt.Sprintf("the sustained %s flow failed at UDP stream setup: %v", e.flow, e.err)
}

func (e *flowSetupError) Unwrap() error { return e.err }

// setupFailure reports whether a failed evidence flow failed at UDP stream
// setup (then the window may run again), with iperf3's reason.
func setupFailure(p iperf3.Profile, m iperf3.Measurement, err error) (*flowSetupError, bool) {
	if err == nil || p.Protocol != iperf3.UDP {
		return nil, false
	}
	for _, pr := range m.Processes {
		if reason, ok := iperf3.UDPSetupFailure(pr.ClientJSON); ok {
			return &flowSetupError{flow: protoName(p.Protocol), reason: reason, at: time.Now(), err: err}, true
		}
	}
	return nil, false
}

func (s *Session) floodPing(ctx context.Context) error {
	n := s.Config.Offload.FloodPings
	if n <= 0 {
		return nil
	}
	dst := s.Topology.Servers[0].DataIP
	// A flood ping needs root in the guest.
	cmd := fmt.Sprintf("ping -f -q -c %d -W 1 %s", n, dst)
	if s.Config.GuestAccess.User != "root" {
		cmd = "sudo -n " + cmd
	}
	res, err := s.Guests[1].Run(ctx, cmd)
	if err != nil {
		return fmt.Errorf("flood ping: %w", err)
	}
	if _, serr := s.SaveArtifact("offload/flood_ping.txt", append(append(res.Stdout, res.Stderr...), '\n')); serr != nil {
		s.Logf("saving evidence: %v", serr)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("flood ping between the data ports failed (is the data path up?): %w", err)
	}
	s.Logf("flood ping %s -> %s: %s", s.Topology.Servers[1].Name, dst, lastLine(res.Stdout, "packet loss"))
	return nil
}

func lastLine(out []byte, containing string) string {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, containing) {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(string(out))
}

// dataInterface finds (and caches) the name of a guest's data interface:
// the one carrying its data port's MAC. The representor check captures there
// as its positive control, the counters check reads its counters.
func (s *Session) dataInterface(ctx context.Context, i int) (string, error) {
	s.ifaceMu.Lock()
	name, ok := s.dataIfaces[i]
	s.ifaceMu.Unlock()
	if ok {
		return name, nil
	}
	srv := s.Topology.Servers[i]
	res, err := s.Guests[i].Run(ctx, "ip -o link show")
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
	s.ifaceMu.Lock()
	if s.dataIfaces == nil {
		s.dataIfaces = map[int]string{}
	}
	s.dataIfaces[i] = name
	s.ifaceMu.Unlock()
	return name, nil
}

// checkDuringFlow starts the sustained flow, waits offload.settle from the
// moment its clients start (OVS installs its flows, TC rules reach the NIC,
// the first packets of each new flow take the miss path), runs every
// configured check on both hypervisors at once, then waits for the flow to
// end and confirms it carried traffic.
//
// retried names the earlier windows of this flow that were given up at UDP
// stream setup; each check's reason carries them. A flow that fails at UDP
// stream setup returns a *flowSetupError and records no verdict.
func (s *Session) checkDuringFlow(ctx context.Context, p iperf3.Profile, retried []string) ([]FlowCheck, error) {
	oc := s.Config.Offload
	flow := protoName(p.Protocol)
	s.Logf("offload checks during a sustained %s flow (%s, %s)", flow, p.Name, oc.FlowDuration)

	// Resolve each guest's hypervisor connection and representor before the
	// flow starts: the window is for the checks alone.
	type target struct {
		runner remote.Runner
		rep    string
		iface  string // the guest's data interface
		err    error
	}
	servers := s.Topology.Servers
	targets := make([]target, len(servers))
	for i, srv := range servers {
		runner, ok := s.Hypervisors[srv.Hypervisor]
		if !ok {
			return nil, fmt.Errorf("no SSH connection to hypervisor %s of %s", srv.Hypervisor, srv.Name)
		}
		rep, err := s.representor(ctx, srv.Hypervisor, srv.DataPortID)
		iface, ierr := s.dataInterface(ctx, i)
		targets[i] = target{runner: runner, rep: rep, iface: iface, err: errors.Join(err, ierr)}
	}

	flowCtx, cancelFlow := context.WithCancel(ctx)
	defer cancelFlow()
	type flowResult struct {
		m   iperf3.Measurement
		err error
	}
	done := make(chan flowResult, 1)
	started := make(chan time.Time, 1)
	trafficEnded := make(chan time.Time, 1)
	go func() {
		// The measured runs are over (they run one after the other and stop
		// their servers), so the evidence flow can use the same ports.
		in := s.iperfInput(p, oc.FlowDuration)
		in.ClientsStarting = func(t time.Time) { started <- t }
		in.ClientsDone = func(t time.Time) { trafficEnded <- t }
		m, err := iperf3.Run(flowCtx, in)
		done <- flowResult{m, err}
	}()

	// The settle time counts from the clients' start, not from here: the
	// runner first asks versions, starts the servers and waits for them to
	// listen, which can take longer than the settle itself. Counted from
	// here, a capture could overlap the miss-path packets every new flow
	// sends through the representor and read a good offload as "software".
	var clientsAt time.Time
	select {
	case clientsAt = <-started:
		s.Logf("sustained %s flow running: %s, until %s; checks from %s", flow, oc.FlowDuration,
			clientsAt.Add(oc.FlowDuration).UTC().Format("15:04:05"), clientsAt.Add(oc.Settle).UTC().Format("15:04:05"))
	case r := <-done:
		s.saveIperfEvidence("offload/"+flow+"/iperf3", r.m)
		if se, ok := setupFailure(p, r.m, r.err); ok {
			return nil, se
		}
		return nil, fmt.Errorf("the sustained %s flow ended before its clients started: %w", flow, s.explainFailure(ctx, "the sustained "+flow+" flow", r.m, orFinished(r.err)))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-time.After(time.Until(clientsAt.Add(oc.Settle))):
	case r := <-done:
		s.saveIperfEvidence("offload/"+flow+"/iperf3", r.m)
		if se, ok := setupFailure(p, r.m, r.err); ok {
			return nil, se
		}
		return nil, fmt.Errorf("the sustained %s flow ended before the checks could start: %w", flow, s.explainFailure(ctx, "the sustained "+flow+" flow", r.m, orFinished(r.err)))
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	checksStart := time.Now()
	s.Logf("checks start %s after the %s flow's clients (offload.settle %s)", checksStart.Sub(clientsAt).Round(time.Millisecond), flow, oc.Settle)
	var (
		mu         sync.Mutex
		flowChecks []FlowCheck
		errs       []error
		wg         sync.WaitGroup
	)
	for i, srv := range servers {
		peer := servers[1-i]
		hv, t, guest := srv.Hypervisor, targets[i], s.Guests[i]
		for _, name := range oc.Checks {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				var c offload.Check
				var cerr error
				switch {
				case t.err != nil:
					c = offload.Check{Name: name, Verdict: results.VerdictInconclusive, Reason: t.err.Error()}
				default:
					c, cerr = s.runCheck(flowCtx, checkTarget{
						hv: t.runner, name: name, rep: t.rep, portID: srv.DataPortID, localMAC: srv.DataMAC, peerMAC: peer.DataMAC,
						flow: flow, guest: guest, guestName: srv.Name, guestIface: t.iface,
					})
				}
				if cerr != nil {
					// The check could not finish (transport lost, cancelled):
					// it proves nothing, and says why in the results.
					c.Name, c.Verdict, c.Reason = name, results.VerdictInconclusive, checkUnfinished+cerr.Error()
				}
				c.Flow, c.Host = flow, hv
				fc := FlowCheck{Flow: flow, Hypervisor: hv, Check: c}
				fc.Files = s.saveCheckEvidence(flow, hv, c)
				mu.Lock()
				defer mu.Unlock()
				if cerr != nil {
					errs = append(errs, cerr)
				}
				flowChecks = append(flowChecks, fc)
			}(name)
		}
	}
	wg.Wait()
	checksDone := time.Now()

	// Every sample must have been taken while the flow ran: the checks
	// started after the flow did (settle), so it suffices that the traffic
	// was still running when the last check returned. The traffic ends when
	// the clients return, which can be long before iperf3.Run does (it then
	// waits for the servers to exit). A flow that ended first makes an empty
	// capture or a silent counter meaningless.
	var fr flowResult
	outlasted := false
	select {
	case end := <-trafficEnded:
		outlasted = !end.After(checksDone)
	default:
	}
	select {
	case fr = <-done:
	case <-ctx.Done():
		return flowChecks, ctx.Err()
	}
	if outlasted {
		why := fmt.Sprintf("the checks took %s after a settle of %s and outlasted the %s sustained flow (offload.flow_duration %s): their samples may postdate the traffic; raise offload.flow_duration",
			checksDone.Sub(checksStart).Round(time.Millisecond), oc.Settle, flow, oc.FlowDuration)
		s.Logf("%s", why)
		for i := range flowChecks {
			c := &flowChecks[i].Check
			if strings.HasPrefix(c.Reason, checkUnfinished) {
				// Already inconclusive, with the real cause (a bound, a lost
				// connection): "raise offload.flow_duration" would hide it.
				continue
			}
			c.Reason = fmt.Sprintf("%s (it said %s: %s)", why, c.Verdict, c.Reason)
			c.Verdict = results.VerdictInconclusive
		}
	}
	s.saveIperfEvidence("offload/"+flow+"/iperf3", fr.m)
	if se, ok := setupFailure(p, fr.m, fr.err); ok {
		// No traffic ever flowed: the samples prove nothing and are not
		// recorded; the caller may run the window again.
		s.Logf("the checks of this window sampled no traffic: the %s flow failed at UDP stream setup (%s)", flow, se.reason)
		return nil, se
	}
	if fr.err != nil {
		// Once, now that the flow and the checks are over: what changed.
		fr.err = s.explainFailure(ctx, "the sustained "+flow+" flow", fr.m, fr.err)
	}
	ran := fr.err == nil && fr.m.Result.BytesReceived > 0
	what := fmt.Sprintf("the sustained %s flow delivered %s", flow, results.FormatBps(fr.m.Result.DeliveredBps))
	if fr.err != nil {
		what = fmt.Sprintf("the sustained %s flow failed: %v", flow, fr.err)
	}
	// No traffic proves nothing, either way: every verdict of a flow that
	// did not run is downgraded.
	for i := range flowChecks {
		flowChecks[i].Check = offload.ConfirmFlow(flowChecks[i].Check, ran, what)
		if len(retried) > 0 {
			flowChecks[i].Check.Reason += " (" + strings.Join(retried, "; ") + ")"
		}
	}
	s.Logf("%s", what)
	if fr.err != nil {
		errs = append(errs, fmt.Errorf("the sustained %s flow of the offload checks: %w", flow, fr.err))
	}
	if err := s.recordChecks(flowChecks); err != nil {
		errs = append(errs, err)
	}
	for _, r := range flowChecks {
		s.Logf("  %-11s %-10s on %s: %s", r.Check.Name, r.Check.Verdict, r.Hypervisor, r.Check.Reason)
	}
	return flowChecks, errors.Join(errs...)
}

func orFinished(err error) error {
	if err == nil {
		return errors.New("it finished early")
	}
	return err
}

// checkTarget is where one check looks: the hypervisor and representor of
// one guest, the guest itself (positive controls) and the flow.
type checkTarget struct {
	hv                      remote.Runner
	name, rep, portID       string
	localMAC, peerMAC, flow string
	guest                   remote.Runner
	guestName, guestIface   string
}

// checkSamples is how many times tc and dpctl are read in one window: two,
// so that counters are seen to grow (one sample proves nothing).
const checkSamples = 2

func (s *Session) runCheck(ctx context.Context, t checkTarget) (offload.Check, error) {
	oc := s.Config.Offload
	macs := []string{t.localMAC, t.peerMAC}
	switch t.name {
	case results.CheckTC:
		in := offload.TCInput{Devices: []string{t.rep}, MACs: macs, Samples: checkSamples, Spacing: oc.CaptureWindow}
		switch oc.VXLANDevice {
		case "":
		case config.VXLANAuto:
			f, err := offload.DiscoverVXLAN(ctx, t.hv)
			if err != nil {
				return offload.Check{Name: results.CheckTC}, err
			}
			in.Decap = &f
		default:
			in.Devices = append(in.Devices, oc.VXLANDevice)
		}
		return offload.CheckTC(ctx, t.hv, in)
	case results.CheckRepresentor:
		// tcpdump runs under `timeout` for capture_window: its bound is that plus the usual one.
		ctx = remote.WithBound(ctx, oc.CaptureWindow+s.Config.Interval(config.IntervalCommand).Timeout, "offload.capture_window + intervals.command")
		return offload.CheckRepresentor(ctx, t.hv, offload.RepresentorInput{
			PortID: t.portID, Representor: t.rep, LocalMAC: t.localMAC, PeerMAC: t.peerMAC, Protocol: t.flow,
			Window: oc.CaptureWindow, FirstPackets: oc.CaptureFirstPackets, MaxPackets: oc.CaptureMaxPackets,
			Control: t.guest, ControlIface: t.guestIface, ControlSudo: s.Config.GuestAccess.User != "root",
		})
	case results.CheckDpctl:
		return offload.CheckDpctl(ctx, t.hv, offload.DpctlInput{MACs: macs, Samples: checkSamples, Spacing: oc.CaptureWindow})
	case results.CheckCounters:
		return offload.CheckCounters(ctx, t.hv, offload.CountersInput{
			Representor: t.rep, Guest: t.guest, GuestIface: t.guestIface, GuestName: t.guestName,
			Window: oc.CaptureWindow, MaxRepPackets: uint64(oc.RepresentorMaxPackets), MinFlowPackets: uint64(oc.CountersMinFlowPackets),
		})
	}
	return offload.Check{}, fmt.Errorf("unknown check %q", t.name)
}

func (s *Session) saveCheckEvidence(flow, hv string, c offload.Check) []string {
	var files []string
	for _, ev := range c.Evidence {
		base := path.Join("offload", flow, hv, ev.Name)
		if rel, err := s.SaveArtifact(base, ev.Output); err != nil {
			s.Logf("saving evidence: %v", err)
		} else {
			files = append(files, rel)
		}
		if len(ev.Stderr) > 0 {
			if _, err := s.SaveArtifact(base+".stderr", ev.Stderr); err != nil {
				s.Logf("saving evidence: %v", err)
			}
		}
	}
	return files
}

func (s *Session) recordChecks(fcs []FlowCheck) error {
	return s.Results.Update(func(r *results.Results) {
		for _, fc := range fcs {
			r.Offload = append(r.Offload, results.CheckResult{
				Name: fc.Check.Name, Flow: fc.Flow, Verdict: fc.Check.Verdict,
				Reason: fc.Hypervisor + ": " + fc.Check.Reason, EvidenceFiles: fc.Files,
			})
		}
	})
}

// Checks returns the bare checks of fcs, for offload.ExpectPath.
func Checks(fcs []FlowCheck) []offload.Check {
	out := make([]offload.Check, 0, len(fcs))
	for _, fc := range fcs {
		c := fc.Check
		c.Reason = fmt.Sprintf("%s flow, %s: %s", fc.Flow, fc.Hypervisor, c.Reason)
		out = append(out, c)
	}
	return out
}
