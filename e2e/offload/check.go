// Package offload holds the four checks that decide whether the measured
// traffic between the two guests ran on the hardware path (ASAP², OVS TC
// offload into the NIC eSwitch) or on the software path: the methodology's
// three complementary checks and a cheap fourth witness.
//
//  1. TC flower rules on the representor and the tunnel device (vxlan_sys_*, genev_sys_*)
//     (`tc -s filter show dev DEV ingress`, JSON or text form);
//  2. a capture on the representor during a sustained flow (tcpdump);
//  3. `ovs-appctl dpctl/dump-flows -m type=offloaded`;
//  4. the representor's link and cpu_hit counters against the guest's own
//     interface counters.
//
// Each check is a pure parser, a pure verdict function and a runner over
// remote.Runner that returns the raw outputs so the caller can save them.
// Nothing here calls Ginkgo or Gomega.
//
// Where things are:
//
//   - tc_parse.go and tc_judge.go, dpctl_parse.go and dpctl_judge.go: each
//     parser apart from its verdict; pipeline.go: the judges follow each
//     pipeline, chain 0 or recirc_id(0) through goto chain or recirc() to the
//     stage that outputs, per direction; tunnelshape.go: the tunnel a stage's
//     own words name (Geneve option TLVs, genev_sys_ and vxlan_sys_ devices,
//     tnl_push headers, default UDP ports): a pipeline over another tunnel
//     than network.type's is no proof.
//   - representor.go and tcpdump.go: the capture, with the guest-side control;
//     counters.go: ip -s -j link and ip stats counters.
//   - check.go: ExpectPath; asap2 needs tc to confirm dpctl per flow and
//     hypervisor.
//   - conntrack.go: the conntrack check of a port-security run: ReadConntrack
//     (one read of the kernel's table, OVS's and the datapath flows),
//     JudgeConntrack with e2e/conntrack.Judge, CTStages and ModeFinding (the
//     pair's flows through ct( or not, against the run's mode).
//   - tunnel.go: offload.tunnel_device: auto (formerly vxlan_device):
//     DiscoverTunnels, the VXLAN and Geneve tunnel ports from ovs-vsctl
//     --format=json, the userspace datapath, vxlan_sys_<port> or
//     genev_sys_<port> present or not; pure parsers.
//   - ovs.go: OVSCommand, the one place an OVS command gets
//     hypervisors.ovs_command_prefix; the harness wraps each hypervisor's
//     runner with WithOVSPrefix. otherconfig.go: ParseOtherConfig, OVS's
//     other_config with hw-offload and tc-policy, for a fleet's drift.
//   - hosttools.go: HostTools, OptionalTools (ethtool, which only feeds the
//     NIC facts; NoEthtool where it is missing), ToolOf (the program a harness
//     command runs); WithHostTools: with access kubernetes, the host tools the
//     OVS container lacks go to the node debug pod; the tools probe,
//     ProbeTools, and its parser, MissingRequired.
//   - vswitchd.go: VswitchdCommand, ParseVswitchd, Finding: does ovs-vswitchd
//     answer, and if not why; the harness's look after a failed window runs
//     it. coverage.go: CoverageCommand, ParseCoverage, DropsBetween: OVS's
//     drop coverage counters before and after a window, read by the harness's
//     drops.go beside the CPU readings.
//   - the pure layer of rule scale (issue 38 item 3): upcall.go
//     (UpcallCommand, ParseUpcallShow: ovs-appctl upcall/show of OVS 2.17 and
//     3.x, per datapath the flows current, avg and max, the dynamic flow
//     limit, offloaded flows where printed, the dump duration and each
//     revalidator's keys; AtLimit); scalelog.go (ParseScaleLog: ovs-vswitchd's
//     log lines of rule scale by kind, flow limit reached, the emergency flush
//     above twice the limit, the unreasonably long dump, ukey installation,
//     failed offload and put, with their first and last times and exact lines,
//     and the rate limit's dropped counts; the counts are lower bounds,
//     coverage/show's upcall_flow_limit_hit is the count); insertion.go
//     (JudgeInsertion over InsertionSamples: the insertion rate over the
//     growth phase, the plateau, the first sample whose next PlateauSamples
//     samples grow by less than PlateauGrowth, below the target or not, the
//     time until HardwareShare of the final count is in hardware or never; on
//     a software datapath the statement says none is in hardware by
//     construction). Recorded on a private OVS 3.1 by
//     testdata/record-scale.sh.
package offload

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// EvidenceFile is one raw output a check looked at. The caller writes Output
// to Name under the run's artifacts and, when non-empty, Stderr to
// Name+".stderr" (tcpdump prints its summary there; `go run ./tools/evidence
// tcpdump Name` reads both), and records Cmd and ExitCode in its command log.
// Output is exactly the command's standard output, so the file can be
// re-analysed with `go run ./tools/evidence`.
type EvidenceFile struct {
	Name     string // file name to save under, e.g. "tc-rep1-sample1.json"
	Cmd      string // the command line as sent to the hypervisor
	Output   []byte // standard output
	Stderr   []byte // standard error (tcpdump prints its summary here)
	ExitCode int    // remote exit status
	Target   string // the Runner that ran it
}

// Check is the outcome of one complementary check.
type Check struct {
	Name    string
	Verdict results.Verdict
	Reason  string
	// Basis says what a judged verdict looked at, one line each: for tc
	// and dpctl the device, direction, the stages of each pipeline (chains
	// and rules, recirc ids and flows) and the samples; empty for the
	// other checks (their reason names their numbers).
	Basis    []string
	Evidence []EvidenceFile
	// Flow and Host say where the check looked (the sustained flow, e.g.
	// "tcp", and the hypervisor); the harness fills them, ExpectPath pairs
	// the checks of one place by them.
	Flow, Host string
	// Fragments is the fragment profile's finding (TCInput.Fragments,
	// DpctlInput.Fragments); nil in any other window.
	Fragments *FragmentFinding
}

// ExpectPath compares the checks with the path a run expects.
//
// An `asap2` run fails when any check says software or inconclusive. A
// `baseline` run fails when any check says offloaded, and also when no check
// positively says software (all inconclusive proves nothing about the path).
// The error lists every offending check with its reason.
func ExpectPath(path results.Path, checks []Check) error {
	if len(checks) == 0 {
		return fmt.Errorf("expected path %q: no offload check ran", path)
	}
	var bad []string
	switch path {
	case results.PathASAP2:
		for _, c := range checks {
			if c.Verdict != results.VerdictOffloaded {
				bad = append(bad, fmt.Sprintf("%s: %s: %s", c.Name, c.Verdict, c.Reason))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("expected path asap2 (offloaded), but %d of %d checks disagree:\n  %s",
				len(bad), len(checks), strings.Join(bad, "\n  "))
		}
		if unconfirmed := dpctlWithoutTC(checks); len(unconfirmed) > 0 {
			return fmt.Errorf("expected path asap2 (offloaded), but dpctl's offloaded:yes (OVS's own claim) is not confirmed by tc's in_hw (the hardware's word) for the same guest pair:\n  %s",
				strings.Join(unconfirmed, "\n  "))
		}
	case results.PathBaseline:
		software := 0
		for _, c := range checks {
			switch c.Verdict {
			case results.VerdictOffloaded:
				bad = append(bad, fmt.Sprintf("%s: %s: %s", c.Name, c.Verdict, c.Reason))
			case results.VerdictSoftware:
				software++
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("expected path baseline (software), but %d of %d checks say offloaded:\n  %s",
				len(bad), len(checks), strings.Join(bad, "\n  "))
		}
		if software == 0 {
			var all []string
			for _, c := range checks {
				all = append(all, fmt.Sprintf("%s: %s: %s", c.Name, c.Verdict, c.Reason))
			}
			return fmt.Errorf("expected path baseline (software), but no check shows the software path:\n  %s",
				strings.Join(all, "\n  "))
		}
	default:
		return fmt.Errorf("expected path: unknown value %q (want %q or %q)", path, results.PathASAP2, results.PathBaseline)
	}
	return nil
}

// dpctlWithoutTC lists every place (flow, hypervisor) where dpctl says
// offloaded but no tc check of the same place says so too. OVS prints
// offloaded:yes also when tc reported no offload state at all
// (lib/netdev-offload-tc.c), so an asap2 verdict rests on tc agreeing.
func dpctlWithoutTC(checks []Check) []string {
	tcAt := map[string]results.Verdict{}
	for _, c := range checks {
		if c.Name == results.CheckTC {
			tcAt[c.Flow+"\x00"+c.Host] = c.Verdict
		}
	}
	var out []string
	for _, c := range checks {
		if c.Name != results.CheckDpctl || c.Verdict != results.VerdictOffloaded {
			continue
		}
		where := fmt.Sprintf("%s flow on %s", orUnknown(c.Flow), orUnknown(c.Host))
		switch v, ok := tcAt[c.Flow+"\x00"+c.Host]; {
		case !ok:
			out = append(out, where+": dpctl offloaded, tc did not run there")
		case v != results.VerdictOffloaded:
			out = append(out, fmt.Sprintf("%s: dpctl offloaded, tc %s", where, v))
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}

// normalizeMAC returns the lower-case colon form of a 6-byte MAC address.
func normalizeMAC(s string) (string, error) {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("MAC address %q: %w", s, err)
	}
	if len(hw) != 6 {
		return "", fmt.Errorf("MAC address %q: want 6 bytes, got %d", s, len(hw))
	}
	return hw.String(), nil
}

// macSet normalizes a list of MAC addresses; an empty list means "any".
type macSet map[string]bool

func newMACSet(macs []string) (macSet, error) {
	set := macSet{}
	var errs []error
	for _, m := range macs {
		n, err := normalizeMAC(m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set[n] = true
	}
	return set, errors.Join(errs...)
}

// has reports whether mac (any case, optionally with a full /48 or
// /ff:ff:ff:ff:ff:ff mask) is in the set. An empty set matches any MAC.
func (s macSet) has(mac string) bool {
	if len(s) == 0 {
		return true
	}
	n, ok := fullMaskMAC(mac)
	return ok && s[n]
}

func (s macSet) String() string {
	if len(s) == 0 {
		return "any MAC"
	}
	list := make([]string, 0, len(s))
	for m := range s {
		list = append(list, m)
	}
	sort.Strings(list)
	return strings.Join(list, ", ")
}

// fullMaskMAC strips an exact-match mask from a MAC as tc and OVS print it
// ("aa:..:ff", "aa:..:ff/48", "aa:..:ff/ff:ff:ff:ff:ff:ff"); a partial mask is
// not an exact match and reports false.
func fullMaskMAC(s string) (string, bool) {
	addr, mask, hasMask := strings.Cut(strings.TrimSpace(s), "/")
	if hasMask && mask != "48" && !strings.EqualFold(mask, "ff:ff:ff:ff:ff:ff") {
		return "", false
	}
	n, err := normalizeMAC(addr)
	if err != nil {
		return "", false
	}
	return n, true
}

// shellQuote is remote.ShellQuote (one implementation for every command
// the harness sends).

// firstLine returns the first non-empty line of b, trimmed, for messages.
func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "..."
			}
			return l
		}
	}
	return ""
}
