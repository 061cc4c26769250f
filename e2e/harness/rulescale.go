package harness

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// scaleRead is one read of a hypervisor during the fill.
type scaleRead struct {
	At           time.Duration `json:"at_ns"`
	Flows        int           `json:"flows"`
	InHardware   int           `json:"in_hardware"`
	OVSFlows     uint64        `json:"ovs_flows,omitempty"`
	OVSFlowLimit uint64        `json:"ovs_flow_limit,omitempty"`
	CTFound      int           `json:"ct_found,omitempty"`
	CTHardware   int           `json:"ct_hardware,omitempty"`
	CTRead       bool          `json:"ct_read,omitempty"`
	Errors       []string      `json:"errors,omitempty"`
}

// vswitchdLogBytes is how much of the log's end is read after the window.
const vswitchdLogBytes = 8 << 20

// coverageKept says whether a coverage counter's growth belongs to the
// rule-scale result: the upcall, ukey, revalidator, dump and dpif flow
// counters.
func coverageKept(name string) bool {
	for _, p := range []string{"upcall_", "ukey_", "revalidate_", "dumped_", "dpif_flow_", "handler_duplicate_upcall"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// RunRuleScale runs the rule-scale profile at n 5-tuples: the client guest
// opens them (flowgen.go's sender) while each hypervisor of the pair is
// read every intervals.rule_scale_sample.poll (the pair's UDP datapath
// flows and how many in hardware, upcall/show, and with port security the
// conntrack table), then judges each table's timeline
// (offload.JudgeInsertion), and beside it coverage/show's growth over the
// window, the ovs-vswitchd log's scale lines of the window and the
// steering mode. The result is written into the results file before it
// returns.
func (pair *Pair) RunRuleScale(ctx context.Context, n int) (_ results.RuleScaleResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	rs := pair.run.Config.RuleScale
	iv := pair.run.Config.Interval(config.IntervalRuleScaleSample)
	id := results.RuleScaleProfileID(n)
	cr := results.RuleScaleResult{N: n, Path: pair.run.Config.Run.ExpectedPath, Rate: rs.Rate, HoldSeconds: rs.Hold.Seconds(),
		StartedAt: time.Now().UTC(), Judged: results.TableDatapathFlows}
	if pair.run.Config.DataPort.PortSecurity {
		cr.Judged = results.TableConntrack
	}
	if err != nil {
		return cr, err
	}
	defer func() { err = end(err) }()
	fail := func(err error) (results.RuleScaleResult, error) {
		cr.Error = err.Error()
		pair.put(id, pair.Results.PutRuleScale(cr))
		return cr, err
	}
	if err := pair.holdReady(id); err != nil {
		return fail(err)
	}
	srv, cli := pair.Topology.Servers[0], pair.Topology.Servers[1]
	gen := FlowSenderInput{Src: cli.DataIP, Dst: srv.DataIP, DstPort: pair.run.Config.Traffic.Port, First: rs.FirstSourcePort,
		N: n, Rate: rs.Rate, Refresh: rs.Refresh, Hold: rs.Hold}
	// The sender's bound: its own schedule, and as long again for a guest
	// slower than the schedule (opening 10000 sockets as fast as it can).
	bound := 2*gen.Expected() + pair.run.Config.Interval(config.IntervalCommand).Timeout
	gen.ReceiverSeconds = bound.Seconds()
	macs := []string{srv.DataMAC, cli.DataMAC}
	var ctFlows []conntrack.Flow
	if cr.Judged == results.TableConntrack {
		c, err1 := netip.ParseAddr(cli.DataIP)
		s, err2 := netip.ParseAddr(srv.DataIP)
		if err1 != nil || err2 != nil {
			return fail(fmt.Errorf("%s: the pair's data addresses %q, %q do not read", id, cli.DataIP, srv.DataIP))
		}
		ctFlows = []conntrack.Flow{{Proto: "udp", Client: c.Unmap(), Server: s.Unmap(), ServerPort: uint16(gen.DstPort), Opened: n}}
	}
	hosts := pair.holdHosts(ctx)
	appctl := appctlSecs(iv.Timeout)
	steering := make([]string, len(hosts))
	before := make([]*offload.Coverage, len(hosts))
	for i, h := range hosts {
		steering[i] = pair.steeringOf(ctx, h)
		if c, err := h.coverage(ctx, appctl); err == nil {
			before[i] = c
		} else {
			pair.Logf("%s: coverage before: %v", id, err)
		}
	}
	logFrom := time.Now().UTC().Add(-time.Second)

	recv, err := pair.Guests[0].Start(ctx, gen.ReceiverCommand())
	if err != nil {
		return fail(fmt.Errorf("%s: starting the receiver on %s: %w", id, pair.Guests[0].Name(), err))
	}
	defer func() {
		if r, err := recv.Stop(); err != nil || (r.ExitCode != 0 && r.Signal == "") {
			pair.Logf("%s: the receiver on %s: exit %d %s %v", id, pair.Guests[0].Name(), r.ExitCode, clipLine(string(r.Stderr)), err)
		}
	}()
	if err := waitUDPListening(ctx, pair.Guests[0], gen.DstPort, pair.run.Config.Interval(config.IntervalIperfServer)); err != nil {
		return fail(fmt.Errorf("%s: the receiver: %w", id, err))
	}
	pair.Logf("%s: %d UDP 5-tuples from %s ports %d..%d to %s:%d, %s, kept %s after the last; each hypervisor read every %s",
		id, n, cli.DataIP, gen.First, gen.First+n-1, srv.DataIP, gen.DstPort, rateWords(rs.Rate), rs.Hold, iv.Poll)
	// Each hypervisor's table before the first 5-tuple: the timeline's
	// sample at 0. Without it the growth phase began at the first read
	// during the fill, which (a read takes most of a second on a loaded
	// hypervisor) already held most of N: the lab's conntrack table showed
	// 850 of 1000 at its first read and "25 rules/s" for the tail
	// (2026-12-06).
	reads := make([][]scaleRead, len(hosts))
	eachHost(hosts, func(i int, h *holdHost) {
		reads[i] = append(reads[i], readScale(ctx, h, macs, appctl, ctFlows, iv.Timeout))
	})
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		everyPoll(stopCtx, start, iv, func(ctx context.Context, at time.Duration) {
			eachHost(hosts, func(i int, h *holdHost) {
				r := readScale(ctx, h, macs, appctl, ctFlows, iv.Timeout)
				if stopCtx.Err() != nil {
					return // the window ended during the read
				}
				// When the read ended, not when it began: the count it
				// shows was reached by then (a rate from these times is a
				// lower bound, a time to the hardware share an upper one).
				r.At = max(at, time.Since(start))
				reads[i] = append(reads[i], r)
			})
		})
	}()
	timing := pair.Timings.Track(results.PhaseChecks)
	res, serr := pair.Guests[1].Run(remote.WithBound(ctx, bound, "the rule-scale sender's schedule twice and intervals.command"), gen.SenderCommand())
	timing()
	stop()
	wg.Wait()
	if rel, err := pair.SaveArtifact("rule-scale/"+id+"-sender.txt", append(append([]byte{}, res.Stdout...), res.Stderr...)); err == nil {
		cr.EvidenceFile = rel
	}
	switch {
	case serr != nil:
		err = fmt.Errorf("%s: the sender on %s: %w", id, pair.Guests[1].Name(), serr)
	case res.ExitCode == 127:
		err = fmt.Errorf("%s: %s has no python3 (exit 127): the rule-scale sender needs it (cloud images carry it for cloud-init)", id, pair.Guests[1].Name())
	case res.ExitCode != 0:
		err = fmt.Errorf("%s: the sender on %s exited %d: %s", id, pair.Guests[1].Name(), res.ExitCode, clipLine(string(res.Stderr)))
	default:
		rep, perr := ParseSenderReport(res.Stdout, n)
		if perr != nil {
			err = fmt.Errorf("%s: %w", id, perr)
		} else {
			cr.Opened, cr.BindFailures, cr.OpenSeconds, cr.KeptOpen = rep.Opened, rep.BindFailures, rep.OpenSeconds, rep.KeptOpen
		}
	}
	if err != nil {
		cr.Error = err.Error()
		pair.Logf("%s FAILED: %v", id, err)
	}
	for i, h := range hosts {
		hr := pair.ruleScaleHost(ctx, id, n, h, reads[i], before[i], logFrom, appctl)
		hr.Steering = steering[i]
		cr.Hosts = append(cr.Hosts, hr)
		pair.Logf("%s: %s: %s", id, hr.Hypervisor, hr.Reason)
	}
	if werr := pair.Results.PutRuleScale(cr); werr != nil && err == nil {
		err = werr
	}
	return cr, err
}

func rateWords(rate int) string {
	if rate <= 0 {
		return "as fast as the guest opens them"
	}
	return fmt.Sprintf("%d new a second", rate)
}

// readScale is one read of a hypervisor during the fill.
func readScale(ctx context.Context, h *holdHost, macs []string, appctl int, ct []conntrack.Flow, bound time.Duration) scaleRead {
	var r scaleRead
	if flows, err := h.pairFlows(ctx, macs, "udp"); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else {
		r.Flows = len(flows)
		for _, f := range flows {
			if offload.InHardware(f) {
				r.InHardware++
			}
		}
	}
	if out, err := h.run(ctx, offload.UpcallCommand(appctl)); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else if dps, err := offload.ParseUpcallShow(string(out)); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else {
		for _, d := range dps {
			r.OVSFlows += d.Current
			r.OVSFlowLimit = max(r.OVSFlowLimit, d.Limit)
		}
	}
	if ct != nil {
		smp, _ := h.readSample(ctx, bound, ct)
		if smp.Error != "" {
			r.Errors = append(r.Errors, smp.Error)
		} else {
			r.CTRead, r.CTFound, r.CTHardware = true, smp.Found, smp.Hardware
		}
	}
	return r
}

// steeringOf reads the NIC's flow_steering_mode once, as words.
func (pair *Pair) steeringOf(ctx context.Context, h *holdHost) string {
	if h.err != nil {
		return "not read: " + h.err.Error()
	}
	if h.bus == "" {
		return "not read: the NIC's PCI address is not known (ethtool -i of the representor)"
	}
	res, err := h.runner.Run(ctx, envinfo.SteeringCommand(h.bus))
	if err != nil {
		return "not read: " + err.Error()
	}
	st, err := envinfo.ReadSteering(envinfo.SteeringInput{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode, Driver: h.driver})
	if err != nil {
		return "not read: " + err.Error()
	}
	if st.Mode != "" {
		return st.Mode
	}
	return strings.TrimSpace(string(st.Status) + ": " + st.Detail)
}

// ruleScaleHost judges one hypervisor's reads, reads its coverage and log
// after the window, and saves the reads as evidence.
func (pair *Pair) ruleScaleHost(ctx context.Context, id string, n int, h *holdHost, reads []scaleRead, before *offload.Coverage, logFrom time.Time, appctl int) results.RuleScaleHost {
	rs := pair.run.Config.RuleScale
	hr := results.RuleScaleHost{Hypervisor: h.name, Software: h.userspace, Samples: len(reads)}
	hr.ReadMeanMS, hr.ReadMaxMS = h.costMS()
	hr.SamplesFile = pair.saveReads(fmt.Sprintf("rule-scale/%s-%s-reads.json", id, safeName(h.name)), reads)
	if h.err != nil {
		hr.Reason = "not read: " + h.err.Error()
		return hr
	}
	var parts []string
	rules := offload.InsertionRules{PlateauSamples: rs.PlateauSamples, PlateauGrowth: rs.PlateauGrowth, HardwareShare: rs.HardwareShare}
	var flows, ct []offload.InsertionSample
	failed := 0
	for _, r := range reads {
		if len(r.Errors) > 0 {
			failed++
		}
		flows = append(flows, offload.InsertionSample{At: r.At, Flows: r.Flows, InHardware: r.InHardware})
		if r.CTRead {
			ct = append(ct, offload.InsertionSample{At: r.At, Flows: r.CTFound, InHardware: r.CTHardware})
		}
		hr.OVSFlows, hr.OVSFlowLimit = r.OVSFlows, r.OVSFlowLimit
	}
	judge := func(table string, ss []offload.InsertionSample) *results.Insertion {
		if len(ss) == 0 {
			parts = append(parts, table+": no read")
			return nil
		}
		in, err := offload.JudgeInsertion(offload.InsertionInput{Samples: ss, Target: n, Software: h.userspace, Rules: rules})
		if err != nil {
			parts = append(parts, table+": "+err.Error())
			return nil
		}
		out := &results.Insertion{Table: table, Final: in.FinalFlows, FinalInHardware: in.FinalInHardware, RulesPerSecond: in.Rate,
			Plateau: in.Plateau, PlateauCount: in.PlateauFlows, BelowTarget: in.BelowTarget, Statement: in.Statement}
		if in.Plateau {
			out.PlateauSeconds = in.PlateauAt.Seconds()
		}
		if !in.HardwareNever {
			v := in.HardwareAt.Seconds()
			out.HardwareSeconds = &v
		}
		parts = append(parts, table+": "+in.Statement)
		return out
	}
	hr.Flows = judge(results.TableDatapathFlows, flows)
	if pair.run.Config.DataPort.PortSecurity {
		hr.Conntrack = judge(results.TableConntrack, ct)
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d reads incomplete (%s)", failed, len(reads), firstError(reads)))
	}
	if hr.OVSFlowLimit > 0 {
		parts = append(parts, fmt.Sprintf("OVS: %d datapath flows at the last read, dynamic limit %d", hr.OVSFlows, hr.OVSFlowLimit))
	}
	// After the window: coverage's growth and the log's scale lines.
	if after, err := h.coverage(ctx, appctl); err != nil || before == nil {
		parts = append(parts, "coverage: not read before and after")
	} else {
		hr.Coverage = map[string]uint64{}
		for name, v := range after.Totals {
			if d := v - before.Totals[name]; coverageKept(name) && v > before.Totals[name] {
				hr.Coverage[name] = d
			}
		}
		parts = append(parts, fmt.Sprintf("coverage: upcall_flow_limit_hit +%d, dpif_flow_del +%d", hr.Coverage["upcall_flow_limit_hit"], hr.Coverage["dpif_flow_del"]))
	}
	pair.scaleLog(ctx, h, logFrom, &hr)
	if hr.LogNote != "" {
		parts = append(parts, "log: "+hr.LogNote)
	} else if len(hr.LogEvents) > 0 {
		var k []string
		for kind, c := range hr.LogEvents {
			k = append(k, fmt.Sprintf("%s %d", kind, c))
		}
		sort.Strings(k)
		parts = append(parts, "log: "+strings.Join(k, ", "))
	} else {
		parts = append(parts, "log: no scale line in the window")
	}
	parts = append(parts, fmt.Sprintf("the reads cost %.0f ms on average, %.0f ms at most", hr.ReadMeanMS, hr.ReadMaxMS))
	hr.Reason = strings.Join(parts, "; ")
	return hr
}

func firstError(reads []scaleRead) string {
	for _, r := range reads {
		if len(r.Errors) > 0 {
			return clipLine(r.Errors[0])
		}
	}
	return ""
}

// scaleLog reads the end of ovs-vswitchd's log and keeps the window's
// scale lines (offload.ParseScaleLog).
func (pair *Pair) scaleLog(ctx context.Context, h *holdHost, from time.Time, hr *results.RuleScaleHost) {
	file := pair.run.Config.RuleScale.VswitchdLog
	if file == "" {
		hr.LogNote = "not read (rule_scale.vswitchd_log is empty)"
		return
	}
	if file == config.VswitchdLogAuto {
		out, err := h.run(ctx, VswitchdCmdlineCommand)
		if err != nil {
			hr.LogNote = "not read: its file not found: " + clipLine(err.Error())
			return
		}
		if file = VswitchdLogOf(out); file == "" {
			hr.LogNote = "not read: ovs-vswitchd logs to no file (no --log-file on its command line, or no ovs-vswitchd in this network namespace)"
			return
		}
	}
	out, err := h.run(ctx, fmt.Sprintf("tail -c %d %s", vswitchdLogBytes, remote.ShellQuote(file)))
	if err != nil {
		hr.LogNote = "not read: " + clipLine(err.Error())
		return
	}
	sl, err := offload.ParseScaleLog(string(out))
	if err != nil {
		hr.LogNote = "unreadable: " + clipLine(err.Error())
		return
	}
	hr.LogEvents = map[string]int{}
	for _, k := range sl.Kinds {
		for _, e := range k.Events {
			if e.Time.Before(from) {
				continue
			}
			hr.LogEvents[string(k.Kind)]++
			if len(hr.LogLines) < 20 {
				hr.LogLines = append(hr.LogLines, e.Line)
			}
		}
	}
	for kind, c := range hr.LogEvents {
		if c == 0 {
			delete(hr.LogEvents, kind)
		}
	}
}

// VswitchdCmdlineCommand prints the command line of the ovs-vswitchd of
// this network namespace, one argument a line: on a hypervisor there is
// one; on the lab, whose hypervisors share the machine's process table, the
// one in the namespace the hypervisor's sshd runs in.
const VswitchdCmdlineCommand = `self=$(readlink /proc/self/ns/net); for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = ovs-vswitchd ] && [ "$(readlink $d/ns/net 2>/dev/null)" = "$self" ] && tr '\0' '\n' <$d/cmdline && break; done; true`

// defaultVswitchdLog is OVS's log file for a bare --log-file (its
// default OVS_LOGDIR).
const defaultVswitchdLog = "/var/log/openvswitch/ovs-vswitchd.log"

// VswitchdLogOf is the log file an ovs-vswitchd command line names:
// --log-file=FILE (a relative FILE under OVS's log directory), a bare
// --log-file the default; "" when it logs to no file.
func VswitchdLogOf(cmdline []byte) string {
	for _, a := range strings.Split(string(cmdline), "\n") {
		a = strings.TrimSpace(a)
		switch {
		case a == "--log-file":
			return defaultVswitchdLog
		case strings.HasPrefix(a, "--log-file="):
			f := strings.TrimPrefix(a, "--log-file=")
			if f == "" {
				return defaultVswitchdLog
			}
			if !strings.HasPrefix(f, "/") {
				return "/var/log/openvswitch/" + f
			}
			return f
		}
	}
	return ""
}

// waitUDPListening waits until g has a UDP socket bound to port (the
// receiver), within iv.
func waitUDPListening(ctx context.Context, g remote.Runner, port int, iv config.Interval) error {
	return wait.Poll(ctx, iv, fmt.Sprintf("%s: UDP port %d bound", g.Name(), port), func(ctx context.Context) (bool, error) {
		res, err := g.Run(ctx, remote.ListenCommand("udp"))
		switch {
		case err != nil:
			return false, err
		case res.ExitCode != 0:
			return false, res.Err()
		case !remote.ListeningPorts(res.Stdout)[port]:
			return false, fmt.Errorf("UDP port %d not bound yet", port)
		}
		return true, nil
	})
}
