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
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The bond / VF-LAG failover profile (issue 38 item 1; config failover,
// docs/CONFIG.md). In order, on the hypervisor the config names:
//
//  1. the bond's state before (the member to take down is its active one
//     unless the config names it; a member already down refuses the run);
//  2. the measured window: one UDP flow at a fixed rate, iperf3 -i on both
//     sides; the down command at T+down_at and the restore command at
//     T+restore_at, T the clients' start — the window's only actions, no
//     read of a guest or hypervisor in it;
//  3. the bond's state after the window, the flow's gaps (iperf3.Outages);
//  4. outside the window: the member down again, the state read, and the
//     evidence window re-run until the pair's flows are in hardware (the
//     time since the command, bounded); the restore, the state, the same.
//
// A down command that ran is always followed by its restore, whatever
// failed in between (the member is never left down by the harness).

// FailoverProfile is the failover flow's iperf3 profile: one UDP stream at
// the configured rate and datagram.
func FailoverProfile(f config.Failover) iperf3.Profile {
	return iperf3.Profile{ID: results.FailoverProfileID, Name: fmt.Sprintf("bond failover under UDP at %s", results.FormatBps(float64(f.BitrateBps))),
		Row: results.FailoverProfileID, Protocol: iperf3.UDP, Streams: 1, BitratePerStream: f.BitrateBps, Length: f.Length}
}

// Bond state commands, each its own line so that the OVS ones get
// hypervisors.ovs_command_prefix (offload.OVSCommand) and the others run on
// the host as they are.
const (
	// BondListCommand lists the Linux bonds; "" when there is none.
	BondListCommand = "ls /proc/net/bonding 2>/dev/null || true"
	// OVSBondListCommand lists the OVS bonds (envinfo.ParseOVSBondList).
	OVSBondListCommand = "ovs-appctl bond/list"
	// LAGProbeCommand reads mlx5's LAG state where debugfs has it (kernels
	// 6.x: lag/state, type, port_sel_mode under each PCI function), one
	// "<dir> <file> <value>" line each; nothing where it is absent.
	LAGProbeCommand = `for d in /sys/kernel/debug/mlx5/*/lag; do [ -d "$d" ] || continue; for f in state type port_sel_mode; do [ -r "$d/$f" ] && printf '%s %s %s\n' "$d" "$f" "$(cat "$d/$f" 2>&1)"; done; done; true`
)

// ProcBondCommand reads a Linux bond's state.
func ProcBondCommand(bond string) string { return "cat /proc/net/bonding/" + bond }

// OVSBondShowCommand reads an OVS bond's state.
func OVSBondShowCommand(bond string) string { return "ovs-appctl bond/show " + bond }

// OVSBondConfigCommand reads an OVS bond's Port other_config (detect mode,
// miimon interval: bond/show lacks them).
func OVSBondConfigCommand(bond string) string {
	return "ovs-vsctl --if-exists get Port " + bond + " other_config"
}

// OVSLinkResetsCommand reads the members' link_resets
// (envinfo.ParseOVSLinkResets).
func OVSLinkResetsCommand(members []string) string {
	return "ovs-vsctl --columns=name,link_resets --format=csv --no-headings list Interface " + strings.Join(members, " ")
}

// OVS's defaults (vswitch.xml): carrier detection; bond-miimon-interval 200.
const (
	ovsDefaultDetect = "carrier"
	ovsDefaultMiimon = 200
)

// BondStateFromLinux is a Linux bond's state from /proc/net/bonding.
func BondStateFromLinux(name string, b envinfo.Bonding) *results.BondState {
	st := &results.BondState{Source: "linux", Name: name, Mode: b.ShortMode(), Active: b.Active,
		MonitorMs: b.MIIPollingMs, UpDelayMs: b.UpDelayMs, DownDelayMs: b.DownDelayMs}
	if st.Active == "None" {
		st.Active = ""
	}
	// miimon 0: no MII monitoring (ARP monitoring or none), whose bound
	// this does not read: unknown, failover.outage_goal_ms must say it.
	if st.MonitorMs == 0 {
		st.MonitorMs = -1
	}
	for _, m := range b.Members {
		st.Members = append(st.Members, results.BondMember{Name: m.Name, Up: m.Up(), LinkFailures: m.LinkFailures, LinkChanges: -1})
	}
	return st
}

// BondStateFromOVS is an OVS bond's state from bond/show, its Port's
// other_config (nil: not read, the monitoring unknown) and its members'
// link_resets (nil: not read).
func BondStateFromOVS(b envinfo.OVSBond, other map[string]string, resets map[string]int) *results.BondState {
	st := &results.BondState{Source: "ovs", Name: b.Name, Mode: b.Mode, Active: b.Active,
		UpDelayMs: b.UpDelayMs, DownDelayMs: b.DownDelayMs, DetectMode: ovsDefaultDetect, MonitorMs: 0}
	if v := other["bond-detect-mode"]; v != "" {
		st.DetectMode = v
	}
	if st.DetectMode == "miimon" {
		st.MonitorMs = ovsDefaultMiimon
		if v := other["bond-miimon-interval"]; v != "" {
			if _, err := fmt.Sscanf(v, "%d", &st.MonitorMs); err != nil {
				st.MonitorMs = -1
			}
		}
	}
	if other == nil {
		st.MonitorMs = -1
	}
	for _, m := range b.Members {
		changes, ok := resets[m.Name]
		if !ok {
			changes = -1
		}
		st.Members = append(st.Members, results.BondMember{Name: m.Name, Up: m.Enabled && m.MayEnable, LinkFailures: -1, LinkChanges: changes})
	}
	return st
}

// failoverHost is the hypervisor whose bond fails.
type failoverHost struct {
	name   string
	runner remote.Runner
	bond   string
}

func (h *failoverHost) run(ctx context.Context, cmd string) ([]byte, error) {
	r, err := h.runner.Run(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: `%s`: %w", h.name, cmd, err)
	}
	if r.ExitCode != 0 {
		return r.Stdout, fmt.Errorf("%s: `%s` exited %d: %s", h.name, cmd, r.ExitCode, strings.TrimSpace(string(r.Stderr)+" "+string(r.Stdout)))
	}
	return r.Stdout, nil
}

// discoverBond names the hypervisor's one bond: a Linux bond, else an OVS
// bond; none or several are errors naming what was found.
func (h *failoverHost) discoverBond(ctx context.Context) (string, error) {
	out, err := h.run(ctx, BondListCommand)
	if err != nil {
		return "", err
	}
	if linux := strings.Fields(string(out)); len(linux) == 1 {
		return linux[0], nil
	} else if len(linux) > 1 {
		return "", fmt.Errorf("%s has %d Linux bonds (%s): name one in failover.bond", h.name, len(linux), strings.Join(linux, ", "))
	}
	out, err = h.run(ctx, OVSBondListCommand)
	if err != nil {
		return "", fmt.Errorf("%s has no Linux bond (/proc/net/bonding) and its OVS bonds could not be listed: %w", h.name, err)
	}
	names, err := envinfo.ParseOVSBondList(out)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %w", h.name, err)
	case len(names) == 0:
		return "", fmt.Errorf("%s has no bond: no /proc/net/bonding and no OVS bond (ovs-appctl bond/list)", h.name)
	case len(names) > 1:
		return "", fmt.Errorf("%s has %d OVS bonds (%s): name one in failover.bond", h.name, len(names), strings.Join(names, ", "))
	}
	return names[0], nil
}

// readBond reads the bond's state once: /proc/net/bonding/<bond>, else
// OVS's bond/show and the Port's other_config; and mlx5's LAG where it is.
// raw is every output read, for the evidence.
func (h *failoverHost) readBond(ctx context.Context) (*results.BondState, []byte, error) {
	var raw strings.Builder
	note := func(cmd string, out []byte, err error) {
		fmt.Fprintf(&raw, "$ %s\n%s", cmd, out)
		if err != nil {
			fmt.Fprintf(&raw, "# %v\n", err)
		}
	}
	var st *results.BondState
	cmd := ProcBondCommand(h.bond)
	out, err := h.run(ctx, cmd)
	note(cmd, out, err)
	if err == nil {
		b, perr := envinfo.ParseBonding(out)
		if perr != nil {
			return nil, []byte(raw.String()), fmt.Errorf("%s: %w", h.name, perr)
		}
		st = BondStateFromLinux(h.bond, b)
	} else {
		cmd = OVSBondShowCommand(h.bond)
		out, oerr := h.run(ctx, cmd)
		note(cmd, out, oerr)
		if oerr != nil {
			return nil, []byte(raw.String()), fmt.Errorf("%s: bond %s is neither a Linux bond (%v) nor an OVS bond (%v)", h.name, h.bond, err, oerr)
		}
		b, perr := envinfo.ParseOVSBond(out)
		if perr != nil {
			return nil, []byte(raw.String()), fmt.Errorf("%s: %w", h.name, perr)
		}
		cmd = OVSBondConfigCommand(h.bond)
		cfgOut, cerr := h.run(ctx, cmd)
		note(cmd, cfgOut, cerr)
		var other map[string]string
		if cerr == nil {
			other, _ = envinfo.ParseOVSMap(cfgOut)
		}
		var names []string
		for _, m := range b.Members {
			names = append(names, m.Name)
		}
		var resets map[string]int
		if len(names) > 0 {
			cmd = OVSLinkResetsCommand(names)
			out, rerr := h.run(ctx, cmd)
			note(cmd, out, rerr)
			if rerr == nil {
				resets, _ = envinfo.ParseOVSLinkResets(out)
			}
		}
		st = BondStateFromOVS(b, other, resets)
	}
	lag, lerr := h.run(ctx, LAGProbeCommand)
	note(LAGProbeCommand, lag, lerr)
	for _, l := range strings.Split(strings.TrimSpace(string(lag)), "\n") {
		if l = strings.TrimSpace(l); l != "" && lerr == nil {
			st.LAG = append(st.LAG, l)
		}
	}
	st.ReadAt = time.Now().UTC()
	return st, []byte(raw.String()), nil
}

// act runs one failover command on the host; the action records it.
func (h *failoverHost) act(ctx context.Context, cmd string, t0 time.Time) *results.FailoverAction {
	a := &results.FailoverAction{Command: cmd, At: time.Now().UTC()}
	if !t0.IsZero() {
		a.AtSeconds = a.At.Sub(t0).Seconds()
	}
	r, err := h.runner.Run(ctx, cmd)
	a.Seconds = time.Since(a.At).Seconds()
	if err != nil {
		a.Error = err.Error()
		return a
	}
	a.ExitCode, a.Stderr = r.ExitCode, strings.TrimSpace(string(r.Stderr))
	return a
}

// failoverHostOf picks the configured side of the pair: the sender's
// hypervisor (Servers[1], whose guest runs the client) or the receiver's.
func (pair *Pair) failoverHostOf(side string) (*failoverHost, error) {
	if pair.Topology == nil || len(pair.Topology.Servers) < 2 || len(pair.Guests) < 2 {
		return nil, errors.New("no guest pair to run between (the topology is not built)")
	}
	srv := pair.Topology.Servers[1]
	if side == config.FailoverDestination {
		srv = pair.Topology.Servers[0]
	}
	r, ok := pair.run.Hypervisors[srv.Hypervisor]
	if !ok {
		return nil, fmt.Errorf("no connection to hypervisor %s (the %s of the pair): the failover commands run there", srv.Hypervisor, side)
	}
	return &failoverHost{name: srv.Hypervisor, runner: r}, nil
}

// RunFailover runs the failover profile and writes its result into the
// results file before it returns. The error is for a profile that could
// not run or whose verdict is not pass.
func (pair *Pair) RunFailover(ctx context.Context) (_ results.FailoverResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	fc := pair.run.Config.Failover
	fr := results.FailoverResult{Path: pair.run.Config.Run.ExpectedPath, Side: fc.Hypervisor, Bond: fc.Bond, Member: fc.Member,
		StartedAt: time.Now().UTC(), DurationSeconds: fc.Duration.Seconds(), DownAtSeconds: fc.DownAt.Seconds(), RestoreAtSeconds: fc.RestoreAt.Seconds(),
		BitrateBps: fc.BitrateBps, Length: fc.Length, ReportIntervalSeconds: fc.ReportInterval.Seconds()}
	if err != nil {
		return fr, err
	}
	defer func() { err = end(err) }()
	id := results.FailoverProfileID
	finish := func(runErr error) (results.FailoverResult, error) {
		if runErr != nil && fr.Error == "" {
			fr.Error = runErr.Error()
		}
		fr.Verdict, fr.Reason, fr.Measured = results.JudgeFailover(fr)
		pair.Logf("%s: %s: %s", id, fr.Verdict, fr.Reason)
		werr := pair.Results.PutFailover(fr)
		switch {
		case runErr != nil:
			return fr, errors.Join(runErr, werr)
		case fr.Verdict != results.FailoverPass:
			return fr, errors.Join(fmt.Errorf("%s %s: %s", id, fr.Verdict, fr.Reason), werr)
		}
		return fr, werr
	}
	if err := pair.notRunOnDamage(id); err != nil {
		return finish(err)
	}
	h, err := pair.failoverHostOf(fc.Hypervisor)
	if err != nil {
		return finish(fmt.Errorf("%s: %w", id, err))
	}
	fr.Hypervisor = h.name
	if h.bond = fc.Bond; h.bond == "" {
		if h.bond, err = h.discoverBond(ctx); err != nil {
			return finish(err)
		}
	}
	fr.Bond = h.bond
	read := func(what string) *results.BondState {
		st, raw, err := h.readBond(ctx)
		rel := path.Join("failover", "bond-"+what+".txt")
		if f, serr := pair.SaveArtifact(rel, raw); serr == nil && st != nil {
			st.File = f
		}
		if err != nil {
			pair.Logf("%s: bond %s on %s %s: %v", id, h.bond, h.name, what, err)
			return nil
		}
		pair.Logf("%s: bond %s on %s %s: %s", id, h.bond, h.name, what, st.Line())
		return st
	}
	if fr.Before = read("before"); fr.Before == nil {
		return finish(fmt.Errorf("bond %s on %s could not be read before the window (failover/bond-before.txt)", h.bond, h.name))
	}
	if fr.Member, fr.MemberFrom = fc.Member, "config"; fr.Member == "" {
		fr.Member, fr.MemberFrom = fr.Before.Active, "active before"
		if fr.Member == "" {
			return finish(fmt.Errorf("bond %s on %s has no active member to take down (%s): name one in failover.member", h.bond, h.name, fr.Before.Line()))
		}
	}
	if ms, words, ok := fr.Before.Bound(); fc.OutageGoalMs > 0 {
		fr.GoalMs, fr.GoalFrom = fc.OutageGoalMs, "failover.outage_goal_ms"
	} else if ok {
		fr.GoalMs, fr.GoalFrom = float64(ms+results.FailoverGoalMarginMs), fmt.Sprintf("the bond's bound: %s + %d ms", words, results.FailoverGoalMarginMs)
	}
	if m, ok := fr.Before.Member(fr.Member); !ok || !m.Up {
		return finish(nil) // the judge says why: no such member, or already down
	}
	down := config.FailoverCommand(fc.DownCommand, h.bond, fr.Member)
	restore := config.FailoverCommand(fc.RestoreCommand, h.bond, fr.Member)

	// The window.
	in := pair.iperfInput(FailoverProfile(fc), fc.Duration)
	in.Interval = fc.ReportInterval
	in.Omit = 0
	in.UDPSetupRetries = 0 // a retry would move the actions' schedule
	// The server's --rcv-timeout (traffic.stall_timeout) must outlast the
	// outage the profile makes, or iperf3 ends the flow in it; the client
	// stays bounded by the harness (-t + iperf_server).
	if gap := fc.RestoreAt - fc.DownAt; in.StallTimeout > 0 && in.StallTimeout <= gap {
		pair.Logf("%s: no iperf3 stall guard: traffic.stall_timeout %s is not longer than the member's time down (%s)", id, in.StallTimeout, gap)
		in.StallTimeout = 0
	}
	var (
		wg      sync.WaitGroup
		once    sync.Once
		flowEnd = make(chan struct{})
	)
	in.ClientsStarting = func(t0 time.Time) {
		pair.Logf("%s: %s on %s: `%s` at +%s, `%s` at +%s of a %s UDP flow at %s (-l %d, -i %s)", id, h.bond, h.name, down, fc.DownAt, restore, fc.RestoreAt,
			fc.Duration, results.FormatBps(float64(fc.BitrateBps)), fc.Length, fc.ReportInterval)
		once.Do(func() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-time.After(time.Until(t0.Add(fc.DownAt))):
				case <-flowEnd:
					return
				case <-ctx.Done():
					return
				}
				fr.Down = h.act(ctx, down, t0)
				// The restore runs whatever happened to the flow or the
				// context: the member is never left down.
				select {
				case <-time.After(time.Until(t0.Add(fc.RestoreAt))):
				case <-ctx.Done():
				}
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pair.run.Config.Interval(config.IntervalCommand).Timeout)
				defer cancel()
				fr.Restore = h.act(rctx, restore, t0)
			}()
		})
	}
	timing := pair.Timings.Track(results.PhaseTraffic)
	m, ierr := iperf3.Run(ctx, in)
	timing()
	close(flowEnd)
	wg.Wait()
	fr.EvidenceFile = pair.saveIperfEvidence("iperf3/"+id, m)
	pair.saveClientLooks("iperf3/"+id, m)
	fr.AfterWindow = read("after-window")
	if ierr != nil {
		pair.Logf("%s FAILED: %v", id, ierr)
		return finish(fmt.Errorf("the failover flow: %w", ierr))
	}
	if err := pair.fillFailoverFlow(&fr, m.Result); err != nil {
		return finish(err)
	}

	// Outside the window: down again, state, re-offload; restore, state,
	// re-offload.
	if fr.Down != nil && fr.Down.ExitCode == 0 && fr.Down.Error == "" && fr.Restore != nil && fr.Restore.ExitCode == 0 && fr.Restore.Error == "" {
		settle := time.Duration(max(fr.Before.MonitorMs, 0)+max(fr.Before.DownDelayMs, 0)+max(fr.Before.UpDelayMs, 0)+results.FailoverGoalMarginMs) * time.Millisecond
		fr.Down2 = h.act(ctx, down, time.Time{})
		func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pair.run.Config.Interval(config.IntervalCommand).Timeout)
			defer cancel()
			defer func() { fr.Restore2 = h.act(rctx, restore, time.Time{}) }()
			if fr.Down2.ExitCode != 0 || fr.Down2.Error != "" {
				return
			}
			downAt := fr.Down2.At.Add(time.Duration(fr.Down2.Seconds * float64(time.Second)))
			_ = sleepCtx(ctx, settle) // the bond's own bound, then its state
			fr.AfterDown = read("after-down")
			fr.Reoffload = append(fr.Reoffload, pair.reoffload(ctx, "failover", downAt))
		}()
		if fr.Restore2.ExitCode == 0 && fr.Restore2.Error == "" {
			upAt := fr.Restore2.At.Add(time.Duration(fr.Restore2.Seconds * float64(time.Second)))
			_ = sleepCtx(ctx, settle)
			fr.AfterRestore = read("after-restore")
			fr.Reoffload = append(fr.Reoffload, pair.reoffload(ctx, "restore", upAt))
		}
	}
	return finish(nil)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fillFailoverFlow reads the flow's gaps into the result: the failover's
// (overlapping [down, restore)), the failback's (after the restore), the
// loss before the down.
func (pair *Pair) fillFailoverFlow(fr *results.FailoverResult, r iperf3.Result) error {
	o, err := iperf3.Outages(r)
	if err != nil {
		return fmt.Errorf("the failover flow's gaps: %w", err)
	}
	FillFailoverFlow(fr, r, o)
	return nil
}

// FillFailoverFlow is fillFailoverFlow's pure part. The gaps are placed by
// the receiver's seconds against the actions' seconds from the clients'
// start (the receiver starts within one interval of them).
func FillFailoverFlow(fr *results.FailoverResult, r iperf3.Result, o iperf3.Outage) {
	fr.Flow = &results.FailoverFlow{Sent: o.Sent, Lost: o.Lost, Tail: o.Tail, OutOfOrder: o.OutOfOrder, PacketsPerSecond: o.PacketsPerSecond,
		ResolutionMs: o.ResolutionMs(), IntervalSeconds: o.IntervalSeconds, DeliveredBps: r.DeliveredBps, Iperf3Version: r.Version}
	downAt, restoreAt := fr.DownAtSeconds, fr.RestoreAtSeconds
	if fr.Down != nil && fr.Down.AtSeconds > 0 {
		downAt = fr.Down.AtSeconds
	}
	if fr.Restore != nil && fr.Restore.AtSeconds > 0 {
		restoreAt = fr.Restore.AtSeconds
	}
	// A gap begins at most one interval before its From: a gap whose
	// From lies within an interval before the down is the down's.
	from := downAt - o.IntervalSeconds
	gap := func(g iperf3.Gap) *results.FailoverGap {
		return &results.FailoverGap{FromSeconds: g.From, ToSeconds: g.To, Lost: g.Lost, MinRun: g.MinRun, Ms: o.Ms(g.Lost), MinMs: o.Ms(g.MinRun),
			Silent: g.Silent, Open: g.Open, Spread: !o.IsGap(g), Words: o.Words(g)}
	}
	if g, ok := o.Longest(from, restoreAt); ok {
		fr.Outage = gap(g)
	}
	var best *iperf3.Gap
	for _, g := range o.Gaps {
		switch {
		case g.To <= from:
			fr.LostBeforeDown += g.Lost
		case g.From >= restoreAt && (fr.Outage == nil || g.From != fr.Outage.FromSeconds || g.To != fr.Outage.ToSeconds):
			if best == nil || g.Lost > best.Lost {
				g := g
				best = &g
			}
		}
	}
	if best != nil {
		fr.Failback = gap(*best)
	}
}

// reoffload re-runs the evidence window (its flows evidence_flow long)
// until every check says offloaded, from since, bounded by reoffload_wait:
// the time until the pair's flows are in hardware again. The verdicts go
// into the failover's evidence, not the run's offload rows.
func (pair *Pair) reoffload(ctx context.Context, after string, since time.Time) results.FailoverReoffload {
	fc := pair.run.Config.Failover
	ro := results.FailoverReoffload{After: after, BoundSeconds: fc.ReoffloadWait.Seconds()}
	cfg := *pair.run.Config
	cfg.Offload.FlowDuration = fc.EvidenceFlow
	stop := pair.Timings.Track(results.PhaseChecks)
	defer stop()
	for {
		ro.Windows++
		w := pair.evidenceWindow()
		w.Config = &cfg
		dir := fmt.Sprintf("failover/reoffload-%s-%d", after, ro.Windows)
		w.Save = func(rel string, data []byte) (string, error) { return pair.SaveArtifact(path.Join(dir, rel), data) }
		w.Record = func([]evidence.FlowCheck) error { return nil }
		fcs, err := evidence.Run(ctx, w)
		checks := evidence.Checks(fcs)
		switch {
		case err != nil:
			ro.Reason = fmt.Sprintf("evidence window %d: %v", ro.Windows, err)
		case offload.ExpectPath(results.PathASAP2, checks) == nil:
			s := time.Since(since).Seconds()
			ro.Seconds = &s
			ro.Reason = fmt.Sprintf("every check offloaded in evidence window %d (%s)", ro.Windows, dir)
			pair.Logf("%s: in hardware again %.1f s after the %s", results.FailoverProfileID, s, after)
			return ro
		case allSoftware(checks) && (pair.run.Config.Run.ExpectedPath == results.PathBaseline || softwareDatapath(checks)):
			ro.Software = true
			ro.Reason = fmt.Sprintf("every check says software in evidence window %d (%s): a software datapath is never in hardware", ro.Windows, dir)
			pair.Logf("%s: after the %s: never in hardware: software datapath", results.FailoverProfileID, after)
			return ro
		default:
			ro.Reason = fmt.Sprintf("evidence window %d: %s", ro.Windows, strings.ReplaceAll(offload.ExpectPath(results.PathASAP2, checks).Error(), "\n  ", "; "))
		}
		if time.Since(since) >= fc.ReoffloadWait || ctx.Err() != nil {
			pair.Logf("%s: after the %s: not in hardware within %s: %s", results.FailoverProfileID, after, fc.ReoffloadWait, ro.Reason)
			return ro
		}
	}
}

func allSoftware(checks []offload.Check) bool {
	for _, c := range checks {
		if c.Verdict != results.VerdictSoftware {
			return false
		}
	}
	return len(checks) > 0
}

// softwareDatapath reports whether the checks name OVS's userspace
// datapath (the lab's): dpctl's "flow-dump from" threads.
func softwareDatapath(checks []offload.Check) bool {
	for _, c := range checks {
		if strings.Contains(c.Reason, "userspace datapath") || strings.Contains(c.Reason, "flow-dump from") {
			return true
		}
	}
	return false
}
