package offload

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The conntrack check (data_port.port_security true): the kernel's own view
// of the run's connections. Its evidence files, one read each, taken once
// in the evidence window after the settle, never in a measured window.
const (
	// ConntrackTableFile is the kernel's table (conntrack.ReadCommand).
	ConntrackTableFile = "conntrack-table.txt"
	// ConntrackOVSFile is OVS's own table (dpctl/dump-conntrack): the
	// userspace datapath's conntrack, which the kernel's listing lacks.
	ConntrackOVSFile = "conntrack-ovs.txt"
	// ConntrackFlowsFile is the datapath's flows (DpctlFlowsCommand), read
	// for the pair's ct( stages: did the mode take effect?
	ConntrackFlowsFile = "conntrack-dpctl-flows.txt"
)

// DpctlFlowsCommand lists every datapath flow, software and offloaded, with
// its actions: enough to see the pair's ct( stages.
const DpctlFlowsCommand = "ovs-appctl dpctl/dump-flows"

// ReadConntrack reads, once each, the kernel's conntrack table, OVS's own
// and the datapath flows of hv. An error is a transport failure; a command
// that ran and failed is in its file's exit code, for JudgeConntrack.
func ReadConntrack(ctx context.Context, hv remote.Runner) ([]EvidenceFile, error) {
	var ev []EvidenceFile
	for _, q := range []struct{ name, cmd string }{
		{ConntrackTableFile, conntrack.ReadCommand},
		{ConntrackOVSFile, conntrack.DPCtlCommand},
		{ConntrackFlowsFile, DpctlFlowsCommand},
	} {
		r, err := hv.Run(ctx, q.cmd)
		if err != nil {
			return ev, onTarget("conntrack check", hv, err)
		}
		ev = append(ev, evidence(q.name, r))
	}
	return ev, nil
}

func evidenceNamed(ev []EvidenceFile, name string) (EvidenceFile, bool) {
	for _, e := range ev {
		if e.Name == name {
			return e, true
		}
	}
	return EvidenceFile{}, false
}

// CTStages are the flows of flows between the guest pair and of them those
// whose actions go through conntrack (a ct(...) action at the top level).
// A flow is the pair's when each of its eth src and dst is a guest of the
// pair or wildcarded, at least one is a guest, and they are not the same
// guest. A wildcarded address (mask all zeros) counts by the address OVS
// printed when that is not zero (the userspace datapath's pre-ct stage:
// eth(src=A/00:..:00,dst=B/00:..:00)) and as any address when it is (tc's
// stages: eth(src=A,dst=00:..:00/00:..:00), then the post-ct stage with
// the source wildcarded).
func CTStages(flows []DpctlFlow, macs []string) (pair, withCT []DpctlFlow) {
	set, err := newMACSet(macs)
	if err != nil || len(set) < 2 {
		return nil, nil
	}
	for _, f := range flows {
		src, anyS, okS := ethAddr(f.EthSrc)
		dst, anyD, okD := ethAddr(f.EthDst)
		if !okS || !okD || (anyS && anyD) {
			continue
		}
		if (!anyS && !set[src]) || (!anyD && !set[dst]) || (!anyS && !anyD && src == dst) {
			continue
		}
		pair = append(pair, f)
		if hasCTAction(f.Actions) {
			withCT = append(withCT, f)
		}
	}
	return pair, withCT
}

// ethAddr reads an eth() src/dst value: its address, whether it matches any
// address (a zero mask over a zero address), and false for what cannot be
// read or a partial mask.
func ethAddr(s string) (addr string, anyAddr, ok bool) {
	a, mask, masked := strings.Cut(strings.TrimSpace(s), "/")
	n, err := normalizeMAC(a)
	if err != nil {
		return "", false, false
	}
	if !masked || mask == "48" || strings.EqualFold(mask, "ff:ff:ff:ff:ff:ff") {
		return n, false, true
	}
	if m, err := normalizeMAC(mask); err != nil || m != "00:00:00:00:00:00" {
		return "", false, false
	}
	return n, n == "00:00:00:00:00:00", true
}

func hasCTAction(actions string) bool {
	toks, err := splitTopLevel(actions)
	if err != nil {
		return false
	}
	for _, t := range toks {
		if strings.HasPrefix(strings.TrimSpace(t), "ct(") {
			return true
		}
	}
	return false
}

// ModeFinding says whether the pair's datapath flows on each hypervisor
// (flows, by hypervisor name) match the run's mode: with port security on,
// at least one flow of the pair must go through ct(; with it off, none
// may. Hypervisors with no flow of the pair prove nothing and are named
// as such. The empty string means the flows agree with the mode (or that
// nothing could be seen); otherwise one sentence for the run's log, its
// failure and the checks' reasons.
func ModeFinding(portSecurity bool, flows map[string][]DpctlFlow, macs []string) string {
	hosts := make([]string, 0, len(flows))
	for h := range flows {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var seen, ct []string
	pairFlows := 0
	for _, h := range hosts {
		pair, withCT := CTStages(flows[h], macs)
		if len(pair) == 0 {
			continue
		}
		pairFlows += len(pair)
		seen = append(seen, h)
		if len(withCT) > 0 {
			ct = append(ct, fmt.Sprintf("%s (%d of %d flows)", h, len(withCT), len(pair)))
		}
	}
	switch {
	case len(seen) == 0:
		return ""
	case portSecurity && len(ct) == 0:
		return fmt.Sprintf("data_port.port_security is true but none of the pair's %d datapath flows on %s goes through conntrack (no ct( action): the security groups did not take effect (a noop firewall driver?); this run is no proof of conntrack offload and measured the path without security groups",
			pairFlows, strings.Join(seen, ", "))
	case !portSecurity && len(ct) > 0:
		return fmt.Sprintf("data_port.port_security is false but the pair's datapath flows go through conntrack (ct( action) on %s: this run did not measure the path without security groups it records",
			strings.Join(ct, ", "))
	}
	return ""
}

// JudgeConntrack is the conntrack check's verdict from ReadConntrack's
// files against the connections the run opened (flows) between the guests
// (macs). The kernel's table decides (conntrack.Judge): offloaded only when
// every data connection is [HW_OFFLOAD]; software when any is tracked in
// software or by the software flowtable ([OFFLOAD]); inconclusive when
// connections are missing or more than the run opened, or when a
// connection not in hardware may be iperf3's idle control connection or a
// stream and the table cannot tell which. iperf3's control connection
// (conntrack.Flow.Control, told apart by the streams' ports of its -J
// output) carries nothing while the test runs: back in software after the
// flowtable's idle timeout, or gone, it is named in the reason and not
// judged. When the kernel's
// table holds none of them and the datapath is OVS's userspace one (its
// flow dump has "flow-dump from" headers), OVS's own table
// (dpctl/dump-conntrack) holding them makes it software: that conntrack is
// never offloaded. Before all this, the pair's datapath flows must go
// through ct(: without one the mode did not take effect, and the check
// says inconclusive with ModeFinding's sentence.
func JudgeConntrack(ev []EvidenceFile, flows []conntrack.Flow, macs []string) Check {
	c := Check{Name: results.CheckConntrack, Evidence: ev}
	bad := func(why string) Check {
		c.Verdict, c.Reason = results.VerdictInconclusive, why
		return c
	}
	files := map[string]EvidenceFile{}
	for _, name := range []string{ConntrackTableFile, ConntrackOVSFile, ConntrackFlowsFile} {
		e, ok := evidenceNamed(ev, name)
		if !ok {
			return bad("no " + name + " read")
		}
		files[name] = e
	}
	fl := files[ConntrackFlowsFile]
	if fl.ExitCode != 0 {
		return bad(fmt.Sprintf("`%s` exited %d: %s", fl.Cmd, fl.ExitCode, firstLine(fl.Stderr)))
	}
	dflows, err := ParseDpctl(fl.Output)
	if err != nil {
		return bad(fmt.Sprintf("cannot read `%s` output: %v", fl.Cmd, err))
	}
	pair, withCT := CTStages(dflows, macs)
	userspace := strings.Contains(string(fl.Output), "flow-dump from ")
	c.Basis = append(c.Basis, fmt.Sprintf("datapath flows: %d of the pair, %d of them through ct(", len(pair), len(withCT)))
	if len(pair) > 0 && len(withCT) == 0 {
		return bad(ModeFinding(true, map[string][]DpctlFlow{fl.Target: dflows}, macs))
	}

	kt := files[ConntrackTableFile]
	if kt.ExitCode != 0 {
		return bad(fmt.Sprintf("`%s` exited %d: %s", kt.Cmd, kt.ExitCode, firstLine(kt.Stderr)))
	}
	entries, err := conntrack.Parse(kt.Output)
	if err != nil {
		return bad(fmt.Sprintf("cannot read the kernel's conntrack table: %v", err))
	}
	j, _, err := conntrack.Judge(entries, flows)
	if err != nil {
		return bad(err.Error())
	}
	c.Basis = append(c.Basis, fmt.Sprintf("kernel table: %d entries; %s", len(entries), j.Reason))
	switch {
	case j.Offloaded:
		c.Verdict, c.Reason = results.VerdictOffloaded, "kernel conntrack: "+j.Reason
		return c
	case j.Software > 0 || j.Flowtable > 0:
		c.Verdict, c.Reason = results.VerdictSoftware, "kernel conntrack: "+j.Reason
		return c
	case j.Found > 0:
		return bad("kernel conntrack: " + j.Reason)
	}

	// The kernel holds none of them: OVS's userspace conntrack?
	ot := files[ConntrackOVSFile]
	if !userspace {
		return bad("kernel conntrack: " + j.Reason + "; the datapath is not OVS's userspace one (no flow-dump headers), so the table was read where the connections are not (network namespace?) or conntrack is not loaded")
	}
	if ot.ExitCode != 0 {
		return bad(fmt.Sprintf("kernel conntrack: %s; `%s` exited %d: %s", j.Reason, ot.Cmd, ot.ExitCode, firstLine(ot.Stderr)))
	}
	oentries, err := conntrack.ParseDPCtl(ot.Output)
	if err != nil {
		return bad(fmt.Sprintf("cannot read OVS's conntrack table: %v", err))
	}
	oj, _, err := conntrack.Judge(oentries, flows)
	if err != nil {
		return bad(err.Error())
	}
	c.Basis = append(c.Basis, fmt.Sprintf("OVS userspace table: %d entries; %d of %d connections the run opened found", len(oentries), oj.Found, oj.Opened))
	if oj.Found == 0 {
		return bad(fmt.Sprintf("neither the kernel's conntrack table nor OVS's (dpctl/dump-conntrack) holds any of the %d connections the run opened", oj.Opened))
	}
	c.Verdict = results.VerdictSoftware
	c.Reason = fmt.Sprintf("OVS's userspace conntrack (dpctl/dump-conntrack, the userspace datapath) holds %d live connections of the run's ports (it opened %d), the kernel's table none: that conntrack runs on the CPU, never offloaded", oj.Found, oj.Opened)
	return c
}
