package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Commands the checks run on a hypervisor (also used by tests and docs).
const (
	cmdDpctlOffloaded = "ovs-appctl dpctl/dump-flows -m type=offloaded"
	cmdDpctlAll       = "ovs-appctl dpctl/dump-flows -m"
)

// TCCommand is the JSON form of the TC listing for dev; TCTextCommand the
// text form for tc versions without usable JSON.
func TCCommand(dev string) string {
	return "tc -s -j filter show dev " + remote.ShellQuote(dev) + " ingress"
}

// QdiscCommand shows dev's ingress qdisc (is there one for tc to list?).
func QdiscCommand(dev string) string {
	return "tc qdisc show dev " + remote.ShellQuote(dev) + " ingress"
}

// TCTextCommand is the text form of TCCommand.
func TCTextCommand(dev string) string {
	return "tc -s filter show dev " + remote.ShellQuote(dev) + " ingress"
}

// FindInterfaceCommand lists the OVS interface names whose
// external_ids:iface-id is portID (the Neutron port id).
func FindInterfaceCommand(portID string) string {
	return "ovs-vsctl --bare --columns=name find Interface " + remote.ShellQuote("external_ids:iface-id="+portID)
}

// TCInput configures CheckTC.
type TCInput struct {
	// Devices to examine: the guest's representor and the tunnel device
	// (decap rules live there: "vxlan_sys_4789", "genev_sys_6081").
	Devices []string
	// MACs of the two guests' data ports.
	MACs []string
	// Samples taken during the sustained flow (at least 2: one sample cannot
	// show the hardware counters grow) and the spacing between them. CheckTC
	// sets each TCObservation.Window to Spacing*Samples, the span in which a
	// rule's last use counts (JudgeTC reads it only for a device with a
	// single sample).
	Samples int
	Spacing time.Duration
	// Decap, when set, is DiscoverTunnels' finding on this hypervisor
	// (offload.tunnel_device: auto): its devices are examined after Devices,
	// each of its absent devices is an inconclusive device with its reason
	// (never silently skipped), its evidence joins the check's, and its
	// summary ends the reason.
	Decap *TunnelFinding
	// Network is the run's network type (network.type: "vxlan",
	// "geneve", "vlan", ...), "" when unknown: the pair's pipelines over
	// another tunnel are no proof (JudgeTCNetwork), and the reason names
	// the tunnel whose decap side was examined.
	Network string
	// OneWay is the flow's direction when its measured traffic goes one
	// way only (iperf3 UDP: client's guest to server's), nil for both
	// ways: the return direction's rules that counted nothing are idle, as
	// expected (JudgeTCFlow).
	OneWay *OneWay
	// Fragments judges with JudgeTCFragments (the fragment profile): the
	// pair's fragment rules labelled, the rest judged as usual.
	Fragments bool
}

// CheckTC lists the ingress TC filters of every device Samples times,
// Spacing apart, during a sustained flow, and judges them with JudgeTC. The
// JSON form is tried first; when tc fails on it or prints JSON that does not
// parse (old iproute2), the text form is used. A tool failure on the
// hypervisor is an inconclusive verdict, not an error: err is only for bad
// input, a transport failure or a cancelled context.
func CheckTC(ctx context.Context, hv remote.Runner, in TCInput) (Check, error) {
	c := Check{Name: results.CheckTC}
	if in.Decap != nil {
		in.Devices = append(append([]string(nil), in.Devices...), in.Decap.Devices...)
		c.Evidence = append(c.Evidence, in.Decap.Evidence...)
	}
	if len(in.Devices) == 0 {
		return c, errors.New("tc check: no device to examine")
	}
	if in.Samples < 2 {
		return c, fmt.Errorf("tc check: at least two samples are needed to see counters grow, got %d", in.Samples)
	}
	if _, err := newMACSet(in.MACs); err != nil {
		return c, fmt.Errorf("tc check: %w", err)
	}
	obs := make([]TCObservation, len(in.Devices))
	for i, dev := range in.Devices {
		obs[i].Device = dev
		obs[i].Window = in.Spacing * time.Duration(in.Samples)
		r, err := hv.Run(ctx, QdiscCommand(dev))
		if err != nil {
			return c, onTarget("tc check", hv, err)
		}
		c.Evidence = append(c.Evidence, evidence("tc-qdisc-"+fileSafe(dev)+".txt", r))
		if r.OK() {
			has := bytes.Contains(r.Stdout, []byte("qdisc ingress")) || bytes.Contains(r.Stdout, []byte("qdisc clsact"))
			obs[i].IngressQdisc = &has
		}
	}
	first := make([]time.Time, len(in.Devices)) // when each device's first sample was taken
	for s := 0; s < in.Samples; s++ {
		if s > 0 {
			if err := wait.Sleep(ctx, in.Spacing); err != nil {
				return c, fmt.Errorf("tc check: %w", err)
			}
		}
		for i, dev := range in.Devices {
			if obs[i].Problem != "" {
				continue
			}
			if s == 0 {
				first[i] = time.Now()
			}
			dump, ev, problem, err := tcSample(ctx, hv, dev, s+1)
			if s > 0 {
				// The span a rule new since the first sample must fit:
				// from the first dump's start to this one's end.
				obs[i].Span = time.Since(first[i])
			}
			c.Evidence = append(c.Evidence, ev...)
			if err != nil {
				return c, err
			}
			if problem != "" {
				obs[i].Problem = problem
				continue
			}
			obs[i].Samples = append(obs[i].Samples, dump)
		}
	}
	ev, err := learnBlocks(ctx, hv, obs)
	c.Evidence = append(c.Evidence, ev...)
	if err != nil {
		return c, err
	}
	if in.Decap != nil {
		for _, a := range in.Decap.Absent {
			obs = append(obs, TCObservation{Device: a.Device, Problem: a.Why})
		}
	}
	if in.Fragments {
		f := JudgeTCFragments(obs, in.MACs, in.Network, in.OneWay)
		c.Fragments, c.Verdict, c.Reason = &f, f.Verdict, f.Summary()
	} else {
		c.Verdict, c.Reason, c.Basis = JudgeTCFlow(obs, in.MACs, in.Network, in.OneWay)
	}
	if in.Decap != nil {
		c.Reason += "; " + decapLabel(in.Decap, in.Network) + " decap: " + in.Decap.Summary
	}
	return c, nil
}

// learnBlocks reads the links once (LinkDetailsCommand) when a rule of some
// device is on a shared block, so that the judge knows the block's ports
// (ParseBlocks). A failed or unreadable listing leaves them unknown, which
// the judge says, and its output is kept as evidence.
func learnBlocks(ctx context.Context, hv remote.Runner, obs []TCObservation) ([]EvidenceFile, error) {
	onBlock := func(o TCObservation) bool {
		return slices.ContainsFunc(o.Samples, func(d TCDump) bool {
			return slices.ContainsFunc(d.Filters, func(f TCFilter) bool { return f.Block != 0 })
		})
	}
	if !slices.ContainsFunc(obs, onBlock) {
		return nil, nil
	}
	r, err := hv.Run(ctx, LinkDetailsCommand)
	if err != nil {
		return nil, onTarget("tc check", hv, err)
	}
	ev := []EvidenceFile{evidence("ip-link-details.json", r)}
	if b, perr := ParseBlocks(r.Stdout); r.OK() && perr == nil {
		for i := range obs {
			obs[i].Blocks = b
		}
	}
	return ev, nil
}

// decapLabel names the tunnel whose decap side the tc check examined: the
// types the discovery found (its tunnels, or the names of its devices:
// "VXLAN", "Geneve", "VXLAN and Geneve"), else the run's network type,
// else "tunnel".
func decapLabel(f *TunnelFinding, network string) string {
	found := map[string]bool{}
	for _, t := range f.Tunnels {
		found[t.Type] = true
	}
	for _, d := range f.Devices {
		found[deviceTunnel(d)] = true
	}
	for _, a := range f.Absent {
		found[deviceTunnel(a.Device)] = true
	}
	var names []string
	for _, typ := range []string{TunnelVXLAN, TunnelGeneve} {
		if found[typ] {
			names = append(names, typeName(typ))
		}
	}
	switch {
	case len(names) > 0:
		return strings.Join(names, " and ")
	case network == TunnelVXLAN || network == TunnelGeneve:
		return typeName(network)
	}
	return "tunnel"
}

// tcSample reads one device once: JSON first, text as fallback.
func tcSample(ctx context.Context, hv remote.Runner, dev string, n int) (TCDump, []EvidenceFile, string, error) {
	var ev []EvidenceFile
	base := fmt.Sprintf("tc-%s-sample%d", fileSafe(dev), n)
	r, err := hv.Run(ctx, TCCommand(dev))
	if err != nil {
		return TCDump{}, ev, "", onTarget("tc check", hv, err)
	}
	ev = append(ev, evidence(base+".json", r))
	if problem, final := tcProblem(dev, r); final {
		return TCDump{}, ev, problem, nil
	} else if noQdisc(r) {
		return TCDump{Format: "json", Filters: []TCFilter{}}, ev, "", nil
	} else if problem == "" {
		if d, perr := ParseTCJSON(r.Stdout); perr == nil {
			return d, ev, "", nil
		}
	}
	// The JSON form failed or did not parse: the text form.
	r, err = hv.Run(ctx, TCTextCommand(dev))
	if err != nil {
		return TCDump{}, ev, "", onTarget("tc check", hv, err)
	}
	ev = append(ev, evidence(base+".txt", r))
	if problem, _ := tcProblem(dev, r); problem != "" {
		return TCDump{}, ev, problem, nil
	}
	if noQdisc(r) {
		return TCDump{Format: "text", Filters: []TCFilter{}}, ev, "", nil
	}
	d, perr := ParseTCText(r.Stdout)
	if perr != nil {
		return TCDump{}, ev, fmt.Sprintf("cannot read `%s` output: %v", TCTextCommand(dev), perr), nil
	}
	return d, ev, "", nil
}

// noQdisc: newer kernels answer a filter listing on a device without an
// ingress qdisc with "Cannot find specified qdisc"; that is an empty listing.
func noQdisc(r remote.Result) bool {
	return bytes.Contains(r.Stderr, []byte("Cannot find specified qdisc"))
}

// tcProblem turns a failed tc run into a reason; final means the text form
// will not do better (missing tool or device).
func tcProblem(dev string, r remote.Result) (problem string, final bool) {
	if r.OK() || noQdisc(r) {
		return "", false
	}
	msg := firstLine(r.Stderr)
	if msg == "" {
		msg = firstLine(r.Stdout)
	}
	switch {
	case r.ExitCode == 127 || strings.Contains(msg, "command not found"):
		return "tc is not installed on the hypervisor: " + msg, true
	case strings.Contains(msg, "Cannot find device"):
		return fmt.Sprintf("device %s does not exist on the hypervisor (%s)", dev, msg), true
	}
	return fmt.Sprintf("tc exited %d: %s", r.ExitCode, msg), false
}

// ConfirmFlow downgrades to inconclusive the verdicts that are only
// evidence when the sustained flow really ran: an offloaded representor
// verdict (an empty capture proves nothing without traffic) and a software
// tc or dpctl verdict (no hardware rule or flow proves nothing without
// traffic). Verdicts that rest on counted packets (representor software,
// tc/dpctl offloaded with growing hardware counters) stand. Call it for
// every check of the window; ran and what describe the flow's own result,
// e.g. from the iperf3 run: ran = delivered bytes > 0.
func ConfirmFlow(c Check, ran bool, what string) Check {
	if ran {
		return c
	}
	switch {
	case c.Name == results.CheckRepresentor && c.Verdict == results.VerdictOffloaded:
		c.Verdict = results.VerdictInconclusive
		c.Reason = fmt.Sprintf("the sustained flow did not run (%s), so an empty capture proves nothing; %s", what, c.Reason)
	case (c.Name == results.CheckTC || c.Name == results.CheckDpctl) && c.Verdict == results.VerdictSoftware:
		c.Verdict = results.VerdictInconclusive
		c.Reason = fmt.Sprintf("the sustained flow did not run (%s), so missing hardware rules prove nothing; %s", what, c.Reason)
	}
	return c
}

// DpctlInput configures CheckDpctl.
type DpctlInput struct {
	MACs []string
	// Samples (at least 2: one sample cannot show counters grow) and the
	// spacing between them. CheckDpctl sets DpctlSamples.Window to
	// Spacing*Samples, the span in which a flow's used: counts.
	Samples int
	Spacing time.Duration
	// Network is the run's network type, "" when unknown
	// (DpctlSamples.Network).
	Network string
	// OneWay is the flow's direction when its measured traffic goes one
	// way only (DpctlSamples.OneWay), nil for both ways.
	OneWay *OneWay
	// Fragments judges with JudgeDpctlFragments (the fragment profile).
	Fragments bool
}

// CheckDpctl samples `ovs-appctl dpctl/dump-flows -m type=offloaded` (and the
// full `-m` dump, for the software flows) Samples times, Spacing apart,
// during a sustained flow, and judges them with JudgeDpctl.
func CheckDpctl(ctx context.Context, hv remote.Runner, in DpctlInput) (Check, error) {
	c := Check{Name: results.CheckDpctl}
	if in.Samples < 2 {
		return c, fmt.Errorf("dpctl check: at least two samples are needed to see counters grow, got %d", in.Samples)
	}
	if _, err := newMACSet(in.MACs); err != nil {
		return c, fmt.Errorf("dpctl check: %w", err)
	}
	s := DpctlSamples{OffloadedIsTyped: true, Window: in.Spacing * time.Duration(in.Samples), Network: in.Network, OneWay: in.OneWay}
	for i := 0; i < in.Samples; i++ {
		if i > 0 {
			if err := wait.Sleep(ctx, in.Spacing); err != nil {
				return c, fmt.Errorf("dpctl check: %w", err)
			}
		}
		for _, q := range []struct {
			cmd, name string
			dst       *[][]DpctlFlow
		}{
			{cmdDpctlOffloaded, fmt.Sprintf("dpctl-offloaded-sample%d.txt", i+1), &s.Offloaded},
			{cmdDpctlAll, fmt.Sprintf("dpctl-all-sample%d.txt", i+1), &s.All},
		} {
			r, err := hv.Run(ctx, q.cmd)
			if err != nil {
				return c, onTarget("dpctl check", hv, err)
			}
			c.Evidence = append(c.Evidence, evidence(q.name, r))
			if !r.OK() {
				c.Verdict, c.Reason = results.VerdictInconclusive, fmt.Sprintf("`%s` exited %d: %s", q.cmd, r.ExitCode, firstLine(r.Stderr))
				return c, nil
			}
			flows, perr := ParseDpctl(r.Stdout)
			if perr != nil {
				c.Verdict, c.Reason = results.VerdictInconclusive, fmt.Sprintf("cannot read `%s` output: %v", q.cmd, perr)
				return c, nil
			}
			*q.dst = append(*q.dst, flows)
		}
	}
	if in.Fragments {
		f := JudgeDpctlFragments(s, in.MACs)
		c.Fragments, c.Verdict, c.Reason = &f, f.Verdict, f.Summary()
		return c, nil
	}
	c.Verdict, c.Reason, c.Basis = JudgeDpctlBasis(s, in.MACs)
	return c, nil
}

func evidence(name string, r remote.Result) EvidenceFile {
	return EvidenceFile{Name: name, Cmd: r.Cmd, Output: r.Stdout, Stderr: r.Stderr, ExitCode: r.ExitCode, Target: r.Target}
}

// fileSafe keeps a device name or id usable as a file name part.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// onTarget says which check failed and, unless err already begins with it,
// on which target: the remote runners name their target in their errors,
// and a failure that names it twice reads as two places.
func onTarget(what string, r remote.Runner, err error) error {
	named := strings.HasPrefix(err.Error(), r.Name()+":")
	switch {
	case named && what == "":
		return err
	case named:
		return fmt.Errorf("%s: %w", what, err)
	case what == "":
		return fmt.Errorf("on %s: %w", r.Name(), err)
	}
	return fmt.Errorf("%s on %s: %w", what, r.Name(), err)
}
