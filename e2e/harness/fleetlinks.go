package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Drift values a node cannot give: explicit, and the same words on every
// node that lacks the same thing, so that a fleet without bonds or
// without devlink has a majority and marks nothing.
const (
	// DriftNone: the uplink is in no bond (mtu_bond, bond_state).
	DriftNone = "none"
	// driftUnknown starts a value the node could not give; the rest says
	// why, naming the command or what was missing.
	driftUnknown = "unknown: "
)

// bondingCommand reads bond's state (envinfo.ParseBonding).
func bondingCommand(bond string) string { return "cat " + remote.ShellQuote("/proc/net/bonding/"+bond) }

// linkDrift adds node's data-path drift to values, from one `ip -j -d link
// show` and, where they apply, one devlink and one /proc/net/bonding read
// (no polling; CollectEnvironment runs before every window):
//
//   - mtu_representor: the MTU of reps, the representors of the pairs'
//     VFs on node ("9000"; "enp1s0f0_0 1500, enp1s0f0_1 9000" when they
//     differ);
//   - mtu_uplink: the MTU of the first representor's uplink
//     (envinfo.UplinkOf; with VF-LAG the other PF's uplink is a member of
//     the same bond, whose state names it);
//   - mtu_bond, bond_state: the bond the uplink is in, its MTU and its
//     mode and members ("802.3ad, 1/2 members up (…)"), DriftNone when it
//     is in none;
//   - eswitch_mode: devlink's mode of the uplink's PCI device (its
//     parentdev, else the representor's `ethtool -i` bus-info).
//
// What the node cannot give is a value starting "unknown: " that says why;
// a command that failed is also added to problems (never a failed run).
func (f *Fleet) linkDrift(ctx context.Context, node string, reps []string, busInfo string, values map[string]string, problems *[]string) {
	hv, ok := f.Hypervisors[node]
	if !ok {
		return
	}
	if len(reps) == 0 {
		for _, k := range []string{results.DriftMTURep, results.DriftMTUUplink, results.DriftMTUBond, results.DriftBondState, results.DriftEswitchMode} {
			values[k] = driftUnknown + "no representor found"
		}
		return
	}
	// run is cmd's output, or why there is none in node-independent
	// words naming the command as label (without its arguments).
	run := func(cmd, label string) ([]byte, string) {
		res, err := hv.Run(ctx, cmd)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: %v", node, err))
			return nil, driftUnknown + failure(label, res)
		}
		return res.Stdout, ""
	}
	pci := ""
	if envinfo.IsPCIAddress(busInfo) {
		pci = busInfo
	}
	out, why := run(envinfo.IPLinkCommand, envinfo.IPLinkCommand)
	var links []envinfo.Link
	if why == "" {
		var err error
		if links, err = envinfo.ParseLinks(out); err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: %v", node, err))
			why = driftUnknown + envinfo.IPLinkCommand + " unreadable"
		}
	}
	if why != "" {
		for _, k := range []string{results.DriftMTURep, results.DriftMTUUplink, results.DriftMTUBond, results.DriftBondState} {
			values[k] = why
		}
	} else {
		values[results.DriftMTURep] = repMTUs(links, reps)
		up, err := envinfo.UplinkOf(links, reps[0])
		switch {
		case errors.Is(err, envinfo.ErrNotEswitchPort):
			why = driftUnknown + "the representor is no eswitch port (no phys_switch_id)"
		case err != nil:
			*problems = append(*problems, fmt.Sprintf("%s: uplink: %v", node, err))
			why = driftUnknown + "no uplink found for the representor"
		}
		if why != "" {
			values[results.DriftMTUUplink], values[results.DriftMTUBond], values[results.DriftBondState] = why, why, why
		} else {
			values[results.DriftMTUUplink] = strconv.Itoa(up.MTU)
			if up.ParentBus == "pci" && envinfo.IsPCIAddress(up.ParentDev) {
				pci = up.ParentDev
			}
			f.bondDrift(node, links, up, run, values, problems)
		}
	}
	if pci == "" {
		values[results.DriftEswitchMode] = driftUnknown + "no PCI device (neither the uplink's parentdev nor the representor's ethtool -i bus-info)"
		return
	}
	out, why = run(envinfo.EswitchCommand(pci), "devlink dev eswitch show")
	if why != "" {
		values[results.DriftEswitchMode] = why
		return
	}
	e, err := envinfo.ParseEswitch(out)
	if err == nil && e.Dev != "pci/"+pci {
		err = fmt.Errorf("%s answered for %s", envinfo.EswitchCommand(pci), e.Dev)
	}
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", node, err))
		values[results.DriftEswitchMode] = driftUnknown + "devlink dev eswitch show unreadable"
		return
	}
	values[results.DriftEswitchMode] = e.Mode
}

// bondDrift adds the bond uplink up is in: its MTU and its state from
// /proc/net/bonding, DriftNone for both when it is in no bond.
func (f *Fleet) bondDrift(node string, links []envinfo.Link, up envinfo.Link, run func(cmd, label string) ([]byte, string), values map[string]string, problems *[]string) {
	bond, ok := envinfo.BondOf(links, up)
	if !ok {
		values[results.DriftMTUBond], values[results.DriftBondState] = DriftNone, DriftNone
		return
	}
	values[results.DriftMTUBond] = strconv.Itoa(bond.MTU)
	out, why := run(bondingCommand(bond.Name), "cat /proc/net/bonding")
	if why != "" {
		values[results.DriftBondState] = why
		return
	}
	b, err := envinfo.ParseBonding(out)
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %s: %v", node, bondingCommand(bond.Name), err))
		values[results.DriftBondState] = driftUnknown + "/proc/net/bonding unreadable"
		return
	}
	values[results.DriftBondState] = b.State()
}

// repMTUs is the representors' MTU: one number when they agree, each
// representor's otherwise (names sorted); a representor missing from the
// link list is said so.
func repMTUs(links []envinfo.Link, reps []string) string {
	per := map[string]string{}
	distinct := map[string]bool{}
	for _, r := range reps {
		v := "not in ip link"
		if l, ok := envinfo.LinkNamed(links, r); ok {
			v = strconv.Itoa(l.MTU)
		}
		per[r] = v
		distinct[v] = true
	}
	if len(distinct) == 1 {
		for v := range distinct {
			if v == "not in ip link" {
				return driftUnknown + "representor not in " + envinfo.IPLinkCommand
			}
			return v
		}
	}
	names := make([]string, 0, len(per))
	for r := range per {
		names = append(names, r)
	}
	sort.Strings(names)
	var parts []string
	for _, r := range names {
		parts = append(parts, r+" "+per[r])
	}
	return strings.Join(parts, ", ")
}

// failure says why the command called label gave nothing: its program
// missing (exit 127), else its exit status and the first line of its
// stderr, or "no answer" when the transport failed (the error itself,
// which names the node, goes to the problems).
func failure(label string, res remote.Result) string {
	prog := strings.Fields(label)[0]
	switch {
	case res.ExitCode == 127:
		return label + ": " + prog + " not found (exit 127)"
	case res.ExitCode > 0:
		line, _, _ := strings.Cut(strings.TrimSpace(string(res.Stderr)), "\n")
		if line == "" {
			return fmt.Sprintf("%s exited %d", label, res.ExitCode)
		}
		return fmt.Sprintf("%s exited %d: %s", label, res.ExitCode, line)
	}
	return label + ": no answer"
}
