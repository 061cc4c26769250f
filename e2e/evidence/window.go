package evidence

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
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

// Flows are the sustained flows the checks observe, one after the other;
// each is the first profile of its protocol in the catalogue, run for
// offload.flow_duration, never one of the measured windows.
var Flows = []string{"tcp-p1", "udp-b0-p1"}

// Guest is one guest of the pair as the window sees it: Guests[0] serves
// the flows on its data address, Guests[1] sends them and the flood ping.
type Guest struct {
	Name       string
	Hypervisor string // the name of its hypervisor, a key of Window.Hypervisors
	PortID     string // its data port
	MAC        string // its data port's MAC
	DataIP     string
	Runner     remote.Runner
}

// Window is everything the evidence window needs, built by the harness.
type Window struct {
	// Config: offload.*, traffic.udp_setup_retries and udp_setup_backoff,
	// intervals.command and guest_access.user are read.
	Config      *config.Config
	Guests      [2]Guest
	Hypervisors map[string]remote.Runner
	// Representor finds the OVS interface of a data port on a hypervisor
	// (asked again for each flow: a port re-plugged between flows is seen).
	Representor func(ctx context.Context, hv, portID string) (string, error)
	// DataInterface finds the name of Guests[i]'s data interface, where the
	// representor check's control capture runs and the counters are read.
	DataInterface func(ctx context.Context, i int) (string, error)
	// Iperf is the iperf3 run of a flow between the pair.
	Iperf func(p iperf3.Profile, duration time.Duration) iperf3.RunInput
	// NotRun, if set, refuses the window before anything runs (an earlier
	// look found the topology damaged).
	NotRun func(what string) error
	// Explain adds to a failed flow's error what the look after it found.
	Explain func(ctx context.Context, what string, m iperf3.Measurement, err error) error
	// Record keeps a flow's verdicts (the results file).
	Record func([]FlowCheck) error
	// Save writes an evidence file under rel (relative to the run
	// directory) and returns the path it is known by.
	Save Saver
	Logf func(format string, args ...any)
	// ChecksDone, when set, is told each flow's timing once its checks
	// have all returned, before the window holds that moment against the
	// end of the flow's traffic (checks that outlast the flow are
	// inconclusive). The window's tests end their fake flows on it and
	// judge the settle from it, so that they do not depend on how fast the
	// machine runs.
	ChecksDone func(FlowTiming)
	// Barrier, when set, runs each flow's window together with other
	// pairs' (a fleet's round of checks over pairs that share no node:
	// the harness's Gate); nil, the pair runs alone.
	Barrier Barrier
	// Family, when set, makes this a profile family's own window (issue
	// 38: aging, fragments) instead of the offload checks': no flood ping,
	// its own flows, checks and directory; nil: the offload checks.
	Family *Family
}

// Family is a profile family's own evidence window.
type Family struct {
	// Dir is where its evidence goes, under the run directory ("aging",
	// "fragments"), instead of "offload".
	Dir string
	// Profiles are its sustained flows, in order (each for
	// offload.flow_duration).
	Profiles []iperf3.Profile
	// Checks are the checks it runs, in offload.checks' order.
	Checks []string
	// Fragments: tc and dpctl judge with offload's fragment judges.
	Fragments bool
}

// dir is where the window's evidence goes.
func (w Window) dir() string {
	if w.Family != nil && w.Family.Dir != "" {
		return w.Family.Dir
	}
	return "offload"
}

// checks are the checks the window runs.
func (w Window) checks() []string {
	if w.Family != nil {
		return w.Family.Checks
	}
	return w.Config.Offload.Checks
}

// profiles are the window's sustained flows.
func (w Window) profiles() ([]iperf3.Profile, error) {
	if w.Family != nil {
		return w.Family.Profiles, nil
	}
	var out []iperf3.Profile
	for _, id := range Flows {
		p, ok := iperf3.Lookup(id)
		if !ok {
			return nil, fmt.Errorf("evidence flow %s is not in the catalogue", id)
		}
		out = append(out, capped(p, w.Config.Offload.FlowBitrate))
	}
	return out, nil
}

// capped is p with each stream held to at most bps (offload.flow_bitrate;
// 0 leaves p as it is): an unlimited profile gets the cap, a slower one
// keeps its own rate.
func capped(p iperf3.Profile, bps int64) iperf3.Profile {
	if bps > 0 && (p.BitratePerStream == 0 || p.BitratePerStream > bps) {
		p.BitratePerStream = bps
	}
	return p
}

// Barrier holds a pair's flow windows to those of the other pairs of its
// round, flow by flow ("tcp", "udp"). Start is called once the flow's
// servers listen and its clients are built, and returns when every pair
// of the round is there (or has left): the clients start then, and the
// settle counts from then. Done is called once the flow's clients have
// returned, and returns when every pair's have: nothing of the pair runs
// after its window (stopping the servers, the look after a failure) while
// another pair's still does. Leave says the pair runs no (further) window
// of the flow, and returns once the round's window of it is over: it comes
// before the look after a failed flow. Each returns an error only when ctx
// ends.
type Barrier interface {
	Start(ctx context.Context, flow string) error
	Done(ctx context.Context, flow string) error
	Leave(ctx context.Context, flow string) error
}

// FlowTiming is when one window of a flow did what: its clients started
// (the moment offload.settle counts from), its checks started, and the
// last of them returned.
type FlowTiming struct {
	Flow                               string
	ClientsAt, ChecksStart, ChecksDone time.Time
}

// Saver writes one evidence file and returns its path relative to the run
// directory.
type Saver func(rel string, data []byte) (string, error)

// Run is the evidence window: a flood ping between the data addresses, then
// a sustained TCP flow and a sustained UDP flow, during each of which every
// configured check runs on both hypervisors. Verdicts and evidence files go
// to Record and Save. The returned error is for failures to run the window
// (transport, cancellation); the verdicts are judged by the caller with
// offload.ExpectPath.
func Run(ctx context.Context, w Window) ([]FlowCheck, error) {
	cfg := w.Config
	if len(w.checks()) == 0 {
		return nil, errors.New("offload.checks is empty: nothing can prove the data path")
	}
	if w.NotRun != nil {
		if err := w.NotRun("the offload checks"); err != nil {
			return nil, err
		}
	}
	if w.Family == nil {
		if err := w.floodPing(ctx); err != nil {
			return nil, err
		}
	}
	profiles, err := w.profiles()
	if err != nil {
		return nil, err
	}
	var all []FlowCheck
	// What the pair's datapath flows say about the run's mode (port
	// security on without ct(, or off with it): said at the end, after
	// both flows ran and recorded their verdicts.
	var mode []string
	for _, p := range profiles {
		got, err := w.checkDuringFlow(ctx, p, nil, &mode)
		// iperf3 sets a UDP flow up with one datagram each way and no
		// retransmission (esnet/iperf#862): on a loaded path the flow fails
		// before any traffic, and so does everything the checks sampled. The
		// whole window (flow and checks) runs again, bounded like a measured
		// run's (traffic.udp_setup_retries, traffic.udp_setup_backoff), and
		// each check's reason says so.
		var notes []string
		for attempt := 1; attempt <= cfg.Traffic.UDPSetupRetries; attempt++ {
			var se *flowSetupError
			if !errors.As(err, &se) {
				break
			}
			notes = append(notes, fmt.Sprintf("window %d of the %s flow given up at %s: UDP stream setup failed (%s)",
				attempt, se.flow, se.at.UTC().Format("15:04:05"), se.reason))
			w.Logf("%s; the evidence window runs again in %s (%d of %d, traffic.udp_setup_retries)",
				notes[len(notes)-1], cfg.Traffic.UDPSetupBackoff, attempt, cfg.Traffic.UDPSetupRetries)
			if werr := wait.Sleep(ctx, cfg.Traffic.UDPSetupBackoff); werr != nil {
				return all, werr
			}
			got, err = w.checkDuringFlow(ctx, p, notes, &mode)
		}
		all = append(all, got...)
		if err != nil {
			return all, errors.Join(err, modeError(mode))
		}
	}
	return all, modeError(mode)
}

// modeError is the run's mode findings as one error, nil without any.
func modeError(findings []string) error {
	if len(findings) == 0 {
		return nil
	}
	return fmt.Errorf("the run's mode did not take effect: %s", strings.Join(findings, "; "))
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
			return &flowSetupError{flow: flowName(p.Protocol), reason: reason, at: time.Now(), err: err}, true
		}
	}
	return nil, false
}

func (w Window) floodPing(ctx context.Context) error {
	n := w.Config.Offload.FloodPings
	if n <= 0 {
		return nil
	}
	dst := w.Guests[0].DataIP
	// A flood ping needs root in the guest.
	cmd := fmt.Sprintf("ping -f -q -c %d -W 1 %s", n, dst)
	if w.Config.GuestAccess.User != "root" {
		cmd = "sudo -n " + cmd
	}
	res, err := w.Guests[1].Runner.Run(ctx, cmd)
	if err != nil {
		return fmt.Errorf("flood ping: %w", err)
	}
	if _, serr := w.Save("offload/flood_ping.txt", append(append(res.Stdout, res.Stderr...), '\n')); serr != nil {
		w.Logf("saving evidence: %v", serr)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("flood ping between the data ports failed (is the data path up?): %w", err)
	}
	w.Logf("flood ping %s -> %s: %s", w.Guests[1].Name, dst, lastLine(res.Stdout, "packet loss"))
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

// checkDuringFlow starts the sustained flow, waits offload.settle from the
// moment its clients start (OVS installs its flows, TC rules reach the NIC,
// the first packets of each new flow take the miss path), runs every
// configured check on both hypervisors at once, then waits for the flow to
// end and confirms it carried traffic.
//
// retried names the earlier windows of this flow that were given up at UDP
// stream setup; each check's reason carries them. A flow that fails at UDP
// stream setup returns a *flowSetupError and records no verdict.
//
// With data_port.port_security, each hypervisor's conntrack table is read
// once with the checks (offload.ReadConntrack) and judged once the flow has
// ended against the connections its iperf3 processes opened. What the
// pair's datapath flows say against the mode (offload.ModeFinding) is
// added to mode.
func (w Window) checkDuringFlow(ctx context.Context, p iperf3.Profile, retried []string, mode *[]string) ([]FlowCheck, error) {
	oc := w.Config.Offload
	flow := flowName(p.Protocol)
	if oc.FlowBitrate > 0 && w.Family == nil {
		w.Logf("offload checks during a sustained %s flow (%s, %s, at most %s a stream: offload.flow_bitrate)", flow, p.Name, oc.FlowDuration, results.FormatBps(float64(p.BitratePerStream)))
	} else {
		w.Logf("offload checks during a sustained %s flow (%s, %s)", flow, p.Name, oc.FlowDuration)
	}

	targets, err := w.flowTargets(ctx)
	if err != nil {
		return nil, err
	}
	f := w.startFlow(ctx, p, flow)
	defer f.cancel()
	clientsAt, err := w.awaitSettle(ctx, p, f)
	if err != nil {
		return nil, err
	}
	checksStart := time.Now()
	w.Logf("checks start %s after the %s flow's clients (offload.settle %s)", checksStart.Sub(clientsAt).Round(time.Millisecond), flow, oc.Settle)
	flowChecks, ctReads, errs := w.runChecks(f.ctx, p, flow, targets)
	checksDone := time.Now()
	if w.ChecksDone != nil {
		w.ChecksDone(FlowTiming{Flow: flow, ClientsAt: clientsAt, ChecksStart: checksStart, ChecksDone: checksDone})
	}

	// Every sample must have been taken while the flow ran: the checks
	// started after the flow did (settle), so it suffices that the traffic
	// was still running when the last check returned. The traffic ends when
	// the clients return, which can be long before iperf3.Run does (it then
	// waits for the servers to exit). A flow that ended first makes an empty
	// capture or a silent counter meaningless.
	outlasted := false
	select {
	case end := <-f.trafficEnded:
		outlasted = !end.After(checksDone)
	default:
	}
	var fr flowResult
	select {
	case fr = <-f.done:
	case <-ctx.Done():
		return flowChecks, ctx.Err()
	}
	flowChecks, errs = w.judgeConntrackAndMode(flow, flowChecks, ctReads, fr, errs, mode)
	if outlasted {
		why := fmt.Sprintf("the checks took %s after a settle of %s and outlasted the %s sustained flow (offload.flow_duration %s): their samples may postdate the traffic; raise offload.flow_duration",
			checksDone.Sub(checksStart).Round(time.Millisecond), oc.Settle, flow, oc.FlowDuration)
		w.Logf("%s", why)
		markOutlasted(flowChecks, why)
	}
	SaveIperf(w.Save, w.Logf, w.dir()+"/"+flow+"/iperf3", fr.m)
	if se, ok := setupFailure(p, fr.m, fr.err); ok {
		// No traffic ever flowed: the samples prove nothing and are not
		// recorded; the caller may run the window again.
		w.Logf("the checks of this window sampled no traffic: the %s flow failed at UDP stream setup (%s)", flow, se.reason)
		return nil, se
	}
	if err := w.confirmFlow(ctx, flow, flowChecks, fr, retried); err != nil {
		errs = append(errs, err)
	}
	if err := w.Record(flowChecks); err != nil {
		errs = append(errs, err)
	}
	for _, r := range flowChecks {
		w.Logf("  %-11s %-10s on %s: %s", r.Check.Name, r.Check.Verdict, r.Hypervisor, r.Check.Reason)
	}
	return flowChecks, errors.Join(errs...)
}

// flowTarget is where one guest's checks run: its hypervisor's runner, its
// representor and its data interface (err: why one could not be found,
// which makes that guest's checks inconclusive rather than the window fail).
type flowTarget struct {
	runner remote.Runner
	rep    string
	iface  string
	err    error
}

// flowTargets resolves each guest's hypervisor connection and representor
// before the flow starts: the window is for the checks alone.
func (w Window) flowTargets(ctx context.Context) ([]flowTarget, error) {
	targets := make([]flowTarget, len(w.Guests))
	for i, srv := range w.Guests {
		runner, ok := w.Hypervisors[srv.Hypervisor]
		if !ok {
			return nil, fmt.Errorf("no SSH connection to hypervisor %s of %s", srv.Hypervisor, srv.Name)
		}
		rep, err := w.Representor(ctx, srv.Hypervisor, srv.PortID)
		iface, ierr := w.DataInterface(ctx, i)
		targets[i] = flowTarget{runner: runner, rep: rep, iface: iface, err: errors.Join(err, ierr)}
	}
	return targets, nil
}

// flowResult is how the sustained flow's iperf3 run ended.
type flowResult struct {
	m   iperf3.Measurement
	err error
}

// sustainedFlow is the evidence flow running in the background: started
// gets the moment its clients start, trafficEnded the moment they return,
// done its result; cancel ends it.
type sustainedFlow struct {
	name         string
	ctx          context.Context
	cancel       context.CancelFunc
	started      chan time.Time
	trafficEnded chan time.Time
	done         chan flowResult
}

// startFlow starts the sustained flow of p for offload.flow_duration, its
// clients behind the round's barrier when the window has one.
func (w Window) startFlow(ctx context.Context, p iperf3.Profile, flow string) *sustainedFlow {
	f := &sustainedFlow{name: flow, started: make(chan time.Time, 1), trafficEnded: make(chan time.Time, 1), done: make(chan flowResult, 1)}
	f.ctx, f.cancel = context.WithCancel(ctx)
	go func() {
		// The measured runs are over (they run one after the other and stop
		// their servers), so the evidence flow can use the same ports.
		in := w.Iperf(p, w.Config.Offload.FlowDuration)
		var barrierErr error
		in.ClientsStarting = func(t time.Time) {
			if w.Barrier != nil {
				// The round's other pairs: their clients start with these.
				barrierErr = w.Barrier.Start(f.ctx, flow)
				t = time.Now()
			}
			f.started <- t
		}
		in.ClientsDone = func(t time.Time) {
			f.trafficEnded <- t // this pair's traffic, not the round's
			if w.Barrier != nil {
				if err := w.Barrier.Done(f.ctx, flow); err != nil && barrierErr == nil {
					barrierErr = err
				}
			}
		}
		m, err := iperf3.Run(f.ctx, in)
		if err == nil {
			err = barrierErr
		}
		f.done <- flowResult{m, err}
	}()
	return f
}

// awaitSettle waits for f's clients to start, then offload.settle, and
// returns when the clients started. The settle time counts from the
// clients' start, not from the flow's: the runner first asks versions,
// starts the servers and waits for them to listen, which can take longer
// than the settle itself. Counted from there, a capture could overlap the
// miss-path packets every new flow sends through the representor and read
// a good offload as "software". A flow that ends before either is an error
// naming why (a *flowSetupError when it failed at UDP stream setup).
func (w Window) awaitSettle(ctx context.Context, p iperf3.Profile, f *sustainedFlow) (time.Time, error) {
	oc := w.Config.Offload
	ended := func(r flowResult, before string) error {
		SaveIperf(w.Save, w.Logf, w.dir()+"/"+f.name+"/iperf3", r.m)
		if se, ok := setupFailure(p, r.m, r.err); ok {
			return se
		}
		return fmt.Errorf("the sustained %s flow ended before %s: %w", f.name, before, w.explain(ctx, f.name, r.m, orFinished(r.err)))
	}
	var clientsAt time.Time
	select {
	case clientsAt = <-f.started:
		w.Logf("sustained %s flow running: %s, until %s; checks from %s", f.name, oc.FlowDuration,
			clientsAt.Add(oc.FlowDuration).UTC().Format("15:04:05"), clientsAt.Add(oc.Settle).UTC().Format("15:04:05"))
	case r := <-f.done:
		return time.Time{}, ended(r, "its clients started")
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	select {
	case <-time.After(time.Until(clientsAt.Add(oc.Settle))):
		return clientsAt, nil
	case r := <-f.done:
		return time.Time{}, ended(r, "the checks could start")
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// runChecks runs every configured check on both hypervisors at once, in
// the running flow (ctx is the flow's), and with data_port.port_security
// reads each hypervisor's conntrack table beside them. A check that could
// not finish is inconclusive, its cause in its reason and in errs.
func (w Window) runChecks(ctx context.Context, p iperf3.Profile, flow string, targets []flowTarget) ([]FlowCheck, [2]conntrackRead, []error) {
	var (
		mu         sync.Mutex
		flowChecks []FlowCheck
		errs       []error
		wg         sync.WaitGroup
		ctReads    [2]conntrackRead
	)
	oneWay := w.oneWay(p)
	servers := w.Guests
	for i, srv := range servers {
		peer := servers[1-i]
		hv, t, guest := srv.Hypervisor, targets[i], srv.Runner
		if w.Config.DataPort.PortSecurity {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				ev, err := offload.ReadConntrack(ctx, t.runner)
				ctReads[i] = conntrackRead{ev: ev, err: err}
			}(i)
		}
		for _, name := range w.checks() {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				var c offload.Check
				var cerr error
				switch {
				case t.err != nil:
					c = offload.Check{Name: name, Verdict: results.VerdictInconclusive, Reason: t.err.Error()}
				default:
					c, cerr = w.runCheck(ctx, checkTarget{
						hv: t.runner, name: name, rep: t.rep, portID: srv.PortID, localMAC: srv.MAC, peerMAC: peer.MAC,
						flow: flow, guest: guest, guestName: srv.Name, guestIface: t.iface, oneWay: oneWay,
					})
				}
				if cerr != nil {
					// The check could not finish (transport lost, cancelled):
					// it proves nothing, and says why in the results.
					c.Name, c.Verdict, c.Reason = name, results.VerdictInconclusive, checkUnfinished+cerr.Error()
				}
				c.Flow, c.Host = flow, hv
				fc := FlowCheck{Flow: flow, Hypervisor: hv, Check: c}
				fc.Files = w.saveCheckEvidence(flow, hv, c)
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
	return flowChecks, ctReads, errs
}

// judgeConntrackAndMode adds, once the flow has ended, the conntrack
// check of a port-security run (each hypervisor's read against the
// connections the flow opened) and what the pair's datapath flows say
// against the mode (offload.ModeFinding: to mode, and to the dpctl and
// conntrack checks' reasons).
func (w Window) judgeConntrackAndMode(flow string, flowChecks []FlowCheck, ctReads [2]conntrackRead, fr flowResult, errs []error, mode *[]string) ([]FlowCheck, []error) {
	portSecurity := w.Config.DataPort.PortSecurity
	servers := w.Guests
	if portSecurity {
		for i, srv := range servers {
			fc, err := w.judgeConntrack(flow, srv.Hypervisor, ctReads[i], fr.m)
			if err != nil {
				errs = append(errs, err)
			}
			flowChecks = append(flowChecks, fc)
		}
	}
	if finding := offload.ModeFinding(portSecurity, w.pairFlows(portSecurity, flowChecks), []string{servers[0].MAC, servers[1].MAC}); finding != "" {
		w.Logf("%s flow: %s", flow, finding)
		*mode = append(*mode, fmt.Sprintf("%s flow: %s", flow, finding))
		for i := range flowChecks {
			c := &flowChecks[i].Check
			if (c.Name == results.CheckDpctl || c.Name == results.CheckConntrack) && !strings.Contains(c.Reason, finding) {
				c.Reason += "; " + finding
			}
		}
	}
	return flowChecks, errs
}

// markOutlasted makes every check that finished after the flow ended
// inconclusive, saying why; one already inconclusive with its real cause
// (a bound, a lost connection) keeps it: "raise offload.flow_duration"
// would hide it.
func markOutlasted(flowChecks []FlowCheck, why string) {
	for i := range flowChecks {
		c := &flowChecks[i].Check
		if strings.HasPrefix(c.Reason, checkUnfinished) {
			continue
		}
		c.Reason = fmt.Sprintf("%s (it said %s: %s)", why, c.Verdict, c.Reason)
		c.Verdict = results.VerdictInconclusive
	}
}

// confirmFlow downgrades every verdict of a flow that carried no traffic
// (no traffic proves nothing, either way), adds the earlier windows given
// up at stream setup to each reason, and returns the flow's own failure,
// explained once now that the flow and the checks are over.
func (w Window) confirmFlow(ctx context.Context, flow string, flowChecks []FlowCheck, fr flowResult, retried []string) error {
	if fr.err != nil {
		fr.err = w.explain(ctx, flow, fr.m, fr.err)
	}
	ran := fr.err == nil && fr.m.Result.BytesReceived > 0
	what := fmt.Sprintf("the sustained %s flow delivered %s", flow, results.FormatBps(fr.m.Result.DeliveredBps))
	if fr.err != nil {
		what = fmt.Sprintf("the sustained %s flow failed: %v", flow, fr.err)
	}
	for i := range flowChecks {
		flowChecks[i].Check = offload.ConfirmFlow(flowChecks[i].Check, ran, what)
		if len(retried) > 0 {
			flowChecks[i].Check.Reason += " (" + strings.Join(retried, "; ") + ")"
		}
	}
	w.Logf("%s", what)
	if fr.err != nil {
		return fmt.Errorf("the sustained %s flow of the offload checks: %w", flow, fr.err)
	}
	return nil
}

// conntrackRead is one hypervisor's conntrack read of a flow.
type conntrackRead struct {
	ev  []offload.EvidenceFile
	err error
}

// judgeConntrack judges one hypervisor's conntrack read against the
// connections the flow's iperf3 processes opened (their ports and
// streams, as run), from the client guest to the server guest.
func (w Window) judgeConntrack(flow, hv string, r conntrackRead, m iperf3.Measurement) (FlowCheck, error) {
	macs := []string{w.Guests[0].MAC, w.Guests[1].MAC}
	var c offload.Check
	var err error
	flows, ferr := conntrackFlows(flow, w.Guests[1].DataIP, w.Guests[0].DataIP, m)
	switch {
	case r.err != nil:
		c = offload.Check{Name: results.CheckConntrack, Verdict: results.VerdictInconclusive, Reason: checkUnfinished + r.err.Error(), Evidence: r.ev}
		err = r.err
	case ferr != nil:
		c = offload.Check{Name: results.CheckConntrack, Verdict: results.VerdictInconclusive, Reason: ferr.Error(), Evidence: r.ev}
	default:
		c = offload.JudgeConntrack(r.ev, flows, macs)
	}
	c.Flow, c.Host = flow, hv
	fc := FlowCheck{Flow: flow, Hypervisor: hv, Check: c}
	fc.Files = w.saveCheckEvidence(flow, hv, c)
	return fc, err
}

// conntrackFlows are the connections a flow's iperf3 processes opened
// (conntrack.IperfFlows of each process's port and streams); when a
// client's -J output lists its streams (iperf3.Connected) for this pair
// and port, their client ports mark its TCP data connections
// (conntrack.IperfStreams), so that the judge tells its idle control
// connection apart for sure.
func conntrackFlows(flow, client, server string, m iperf3.Measurement) ([]conntrack.Flow, error) {
	c, err1 := netip.ParseAddr(client)
	s, err2 := netip.ParseAddr(server)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("the pair's data addresses: %w", err)
	}
	var out []conntrack.Flow
	for _, pr := range m.Processes {
		if pr.Port < 1 || pr.Port > 65535 || pr.Streams < 1 {
			return nil, fmt.Errorf("iperf3 process on port %d with %d streams: cannot count its connections", pr.Port, pr.Streams)
		}
		udp := flow == results.ProtoUDP
		if st, err := iperf3.Connected(pr.ClientJSON); err == nil && st.Client == c.Unmap() && st.Server == s.Unmap() && int(st.ServerPort) == pr.Port && len(st.Ports) == pr.Streams {
			out = append(out, conntrack.IperfStreams(udp, c.Unmap(), s.Unmap(), uint16(pr.Port), st.Ports)...)
			continue
		}
		out = append(out, conntrack.IperfFlows(udp, pr.Streams, c.Unmap(), s.Unmap(), uint16(pr.Port))...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the sustained %s flow ran no iperf3 process: no connection to look for", flow)
	}
	return out, nil
}

// pairFlows are the datapath flows each hypervisor's checks read last:
// with port security the conntrack check's dump, else the dpctl check's
// last full dump (none when dpctl is not among offload.checks).
func (w Window) pairFlows(portSecurity bool, fcs []FlowCheck) map[string][]offload.DpctlFlow {
	out := map[string][]offload.DpctlFlow{}
	for _, fc := range fcs {
		var last []byte
		for _, ev := range fc.Check.Evidence {
			switch {
			case portSecurity && fc.Check.Name == results.CheckConntrack && ev.Name == offload.ConntrackFlowsFile,
				!portSecurity && fc.Check.Name == results.CheckDpctl && strings.HasPrefix(ev.Name, "dpctl-all-"):
				if ev.ExitCode == 0 {
					last = ev.Output
				}
			}
		}
		if last == nil {
			continue
		}
		if flows, err := offload.ParseDpctl(last); err == nil {
			out[fc.Hypervisor] = flows
		}
	}
	return out
}

// explain is the look after a failed flow (Explain), taken once the
// round's window of the flow is over (Barrier.Leave): the look polls the
// pair's guests and hypervisors.
func (w Window) explain(ctx context.Context, flow string, m iperf3.Measurement, err error) error {
	if w.Barrier != nil {
		if lerr := w.Barrier.Leave(ctx, flow); lerr != nil {
			return fmt.Errorf("%w; not looked at: %v", err, lerr)
		}
	}
	return w.Explain(ctx, "the sustained "+flow+" flow", m, err)
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
	// oneWay is the flow's direction when its measured traffic goes one
	// way only (UDP), nil otherwise or when it cannot be told.
	oneWay *offload.OneWay
}

// oneWay is the direction of a flow whose measured traffic goes one way
// only: UDP, from the iperf3 client's guest to the server's (the server is
// the guest whose data address the run input names). nil for TCP, and when
// the server cannot be told (then both directions are judged, as before).
func (w Window) oneWay(p iperf3.Profile) *offload.OneWay {
	if p.Protocol != iperf3.UDP || w.Iperf == nil {
		return nil
	}
	addr := w.Iperf(p, w.Config.Offload.FlowDuration).ServerAddr
	for i, g := range w.Guests {
		if addr != "" && g.DataIP == addr && w.Guests[1-i].DataIP != addr {
			return &offload.OneWay{From: w.Guests[1-i].MAC, To: g.MAC}
		}
	}
	return nil
}

// checkSamples is how many times tc and dpctl are read in one window: two,
// so that counters are seen to grow (one sample proves nothing).
const checkSamples = 2

func (w Window) runCheck(ctx context.Context, t checkTarget) (offload.Check, error) {
	oc := w.Config.Offload
	macs := []string{t.localMAC, t.peerMAC}
	switch t.name {
	case results.CheckTC:
		in := offload.TCInput{Devices: []string{t.rep}, MACs: macs, Samples: checkSamples, Spacing: oc.CaptureWindow, Network: w.Config.Network.Type, OneWay: t.oneWay}
		switch dev := oc.DecapDevice(); dev {
		case "":
		case config.TunnelAuto:
			f, err := offload.DiscoverTunnels(ctx, t.hv)
			if err != nil {
				return offload.Check{Name: results.CheckTC}, err
			}
			in.Decap = &f
		default:
			in.Devices = append(in.Devices, dev)
		}
		in.Fragments = w.Family != nil && w.Family.Fragments
		return offload.CheckTC(ctx, t.hv, in)
	case results.CheckRepresentor:
		// tcpdump runs under `timeout` for capture_window: its bound is that plus the usual one.
		ctx = remote.WithBound(ctx, oc.CaptureWindow+w.Config.Interval(config.IntervalCommand).Timeout, "offload.capture_window + intervals.command")
		return offload.CheckRepresentor(ctx, t.hv, offload.RepresentorInput{
			PortID: t.portID, Representor: t.rep, LocalMAC: t.localMAC, PeerMAC: t.peerMAC, Protocol: t.flow,
			Window: oc.CaptureWindow, FirstPackets: oc.CaptureFirstPackets, MaxPackets: oc.CaptureMaxPackets,
			Control: t.guest, ControlIface: t.guestIface, ControlSudo: w.Config.GuestAccess.User != "root",
		})
	case results.CheckDpctl:
		return offload.CheckDpctl(ctx, t.hv, offload.DpctlInput{MACs: macs, Samples: checkSamples, Spacing: oc.CaptureWindow, Network: w.Config.Network.Type, OneWay: t.oneWay,
			Fragments: w.Family != nil && w.Family.Fragments})
	case results.CheckCounters:
		return offload.CheckCounters(ctx, t.hv, offload.CountersInput{
			Representor: t.rep, Guest: t.guest, GuestIface: t.guestIface, GuestName: t.guestName,
			Window: oc.CaptureWindow, MaxRepPackets: uint64(oc.RepresentorMaxPackets), MinFlowPackets: uint64(oc.CountersMinFlowPackets),
		})
	}
	return offload.Check{}, fmt.Errorf("unknown check %q", t.name)
}

func (w Window) saveCheckEvidence(flow, hv string, c offload.Check) []string {
	var files []string
	for _, ev := range c.Evidence {
		base := path.Join(w.dir(), flow, hv, ev.Name)
		if rel, err := w.Save(base, ev.Output); err != nil {
			w.Logf("saving evidence: %v", err)
		} else {
			files = append(files, rel)
		}
		if len(ev.Stderr) > 0 {
			if _, err := w.Save(base+".stderr", ev.Stderr); err != nil {
				w.Logf("saving evidence: %v", err)
			}
		}
	}
	return files
}

// CheckResults are fcs as the results file keeps them.
func CheckResults(fcs []FlowCheck) []results.CheckResult {
	out := make([]results.CheckResult, 0, len(fcs))
	for _, fc := range fcs {
		var basis []string
		for _, b := range fc.Check.Basis {
			basis = append(basis, fc.Hypervisor+": "+b)
		}
		out = append(out, results.CheckResult{
			Name: fc.Check.Name, Flow: fc.Flow, Verdict: fc.Check.Verdict,
			Reason: fc.Hypervisor + ": " + fc.Check.Reason, Basis: basis, EvidenceFiles: fc.Files,
		})
	}
	return out
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

// flowName is a flow's protocol as results name it.
func flowName(p iperf3.Protocol) string {
	if p == iperf3.UDP {
		return results.ProtoUDP
	}
	return results.ProtoTCP
}

// SaveIperf writes each process's raw client and server JSON (and stderr)
// under base and returns the first client file (relative to the run
// directory).
func SaveIperf(save Saver, logf func(string, ...any), base string, m iperf3.Measurement) string {
	first := ""
	for i, pr := range m.Processes {
		name := fmt.Sprintf("%s-p%d-client.json", base, i+1)
		if len(pr.ClientJSON) > 0 {
			if rel, err := save(name, pr.ClientJSON); err != nil {
				logf("saving %s: %v", name, err)
			} else if first == "" {
				first = rel
			}
		}
		if len(pr.ServerJSON) > 0 {
			sname := fmt.Sprintf("%s-p%d-server.json", base, i+1)
			if _, err := save(sname, pr.ServerJSON); err != nil {
				logf("saving %s: %v", sname, err)
			}
		}
		for _, e := range []struct {
			suffix string
			data   []byte
		}{{"client.stderr", pr.ClientStderr}, {"server.stderr", pr.ServerStderr}} {
			if len(e.data) > 0 {
				if _, err := save(fmt.Sprintf("%s-p%d-%s", base, i+1, e.suffix), e.data); err != nil {
					logf("saving evidence: %v", err)
				}
			}
		}
	}
	return first
}
