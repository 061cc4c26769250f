package history

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Facts is a run's environment identity (issue 37): what it measured on,
// as normalized key → value facts read from its results file (Identity),
// kept by the store beside the run, so that a change point names what
// changed in the environment with it ("kernel of compute2 6.1.0-27 →
// 6.1.0-28"). Keys are the Fact* constants and, per hypervisor,
// "hv.<name>.<fact>" with <fact> one of HypervisorFacts.
type Facts map[string]string

// The run-wide fact keys.
const (
	FactHarness     = "harness"            // environment.harness.revision (+ " (modified)")
	FactCloud       = "cloud"              // environment.cloud
	FactBackend     = "backend"            // environment.network_backend: "ml2/ovn"
	FactKubernetes  = "kubernetes"         // environment.kubernetes_server_version: "v1.29.4"
	FactCompute     = "openstack.compute"  // Nova's microversions: "2.1 to 2.95"
	FactNetworkAPI  = "openstack.network"  // Neutron's versions: "v2.0 CURRENT"
	FactIdentityAPI = "openstack.identity" // Keystone's: "v3.14 stable"
	FactNetworkType = "network.type"       // environment.network_type: "vxlan"
	FactMTU         = "network.mtu"        // environment.mtu
	FactGuestKernel = "guest.kernel"       // environment.guest_kernel
)

// factLabels name the run-wide facts in a change's sentence.
var factLabels = map[string]string{
	FactHarness: "harness", FactCloud: "cloud", FactBackend: "network backend", FactKubernetes: "Kubernetes",
	FactCompute: "Nova microversions", FactNetworkAPI: "Neutron API", FactIdentityAPI: "Keystone API",
	FactNetworkType: "network type", FactMTU: "MTU", FactGuestKernel: "guest kernel",
}

// HypervisorFacts are the per-hypervisor facts ("hv.<name>.<fact>") with
// their labels: from environment.hypervisors[] (kernel, ovs_version,
// ovn_controller_version, nic_driver and nic_driver_version, nic_firmware,
// nic_firmware_running / _stored, tc_version) and, for the nodes of a
// fleet run, fleet.drift[].values (results.DriftKeys), which fill what the
// hypervisors list does not give.
var HypervisorFacts = []struct{ Key, Label string }{
	{"kernel", "kernel"},
	{"ovs", "OVS"},
	{"ovn_controller", "OVN controller"},
	{"nic_driver", "NIC driver"},
	{"firmware", "NIC firmware"},
	{"firmware.running", "NIC firmware running"},
	{"firmware.stored", "NIC firmware stored"},
	{"tc", "tc"},
	{results.DriftEswitchMode, "eswitch mode"},
	{results.DriftHWOffload, "OVS hw-offload"},
	{results.DriftTCPolicy, "OVS tc-policy"},
	{results.DriftMTURep, "representor MTU"},
	{results.DriftMTUUplink, "uplink MTU"},
	{results.DriftMTUBond, "bond MTU"},
	{results.DriftBondState, "bond state"},
}

// driftFacts maps the fleet's drift keys onto hypervisor facts where the
// names differ.
var driftFacts = map[string]string{
	results.DriftNICDriver: "nic_driver", results.DriftNICFirmware: "firmware",
	results.DriftOVSVersion: "ovs", results.DriftKernelVersion: "kernel",
}

// Identity derives a run's environment identity from its results file:
// the run-wide facts that are recorded and each hypervisor's. A value is
// trimmed and its runs of white space made one space; an empty value is
// no fact. A fleet's drift value "unknown…" is no fact either. Bad input
// is an error naming the key and the value: a hypervisor or drift node
// without a name that holds facts, or one hypervisor listed twice with
// two values of one fact (a drift value never overrides a hypervisor's).
func Identity(r *results.Results) (Facts, error) {
	env := r.Environment
	f := Facts{}
	var errs []error
	put := func(key, v string) {
		if v = norm(v); v != "" {
			f[key] = v
		}
	}
	if h := env.Harness; h != nil && h.Revision != results.Unknown && h.Revision != "" {
		v := h.Revision
		if h.Modified {
			v += " (modified)"
		}
		put(FactHarness, v)
	}
	put(FactCloud, env.Cloud)
	put(FactBackend, env.NetworkBackend)
	put(FactKubernetes, env.KubernetesServerVersion)
	switch lo, hi := norm(env.ComputeMinMicroversion), norm(env.ComputeMaxMicroversion); {
	case lo != "" && hi != "":
		put(FactCompute, lo+" to "+hi)
	default:
		put(FactCompute, hi)
	}
	put(FactNetworkAPI, strings.Join(env.NetworkAPIVersions, ", "))
	put(FactIdentityAPI, env.IdentityAPIVersion)
	put(FactNetworkType, env.NetworkType)
	if env.MTU > 0 {
		put(FactMTU, strconv.Itoa(env.MTU))
	}
	put(FactGuestKernel, env.GuestKernel)

	from := map[string]string{} // hypervisor fact key → where it was read
	for i, h := range env.Hypervisors {
		where := fmt.Sprintf("environment.hypervisors[%d]", i)
		driver := strings.TrimSpace(h.NICDriver + " " + h.NICDriverVersion)
		for _, kv := range [][2]string{{"kernel", h.Kernel}, {"ovs", h.OVSVersion}, {"ovn_controller", h.OVNControllerVersion},
			{"nic_driver", driver}, {"firmware", h.NICFirmware}, {"firmware.running", h.NICFirmwareRunning},
			{"firmware.stored", h.NICFirmwareStored}, {"tc", h.TCVersion}} {
			if err := putNode(f, from, where, h.Name, kv[0], kv[1], true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if r.Fleet != nil {
		for i, d := range r.Fleet.Drift {
			for _, k := range slices.Sorted(maps.Keys(d.Values)) {
				v := d.Values[k]
				if strings.HasPrefix(strings.TrimSpace(v), "unknown") {
					continue
				}
				fact := k
				if m, ok := driftFacts[k]; ok {
					fact = m
				}
				where := fmt.Sprintf("fleet.drift[%d].values.%s", i, k)
				if err := putNode(f, from, where, d.Node, fact, v, false); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return f, errors.Join(errs...)
}

// putNode sets the fact "hv.<node>.<fact>" read at where. The same node
// twice with another value is an error when strict (two hypervisor
// entries); otherwise (a fleet's drift) the first value stays.
func putNode(f Facts, from map[string]string, where, node, fact, v string, strict bool) error {
	v = norm(v)
	if v == "" {
		return nil
	}
	node = strings.TrimSpace(node)
	if node == "" {
		return fmt.Errorf("%s: %s %q on a node without a name", where, fact, v)
	}
	key := "hv." + node + "." + fact
	old, ok := f[key]
	switch {
	case !ok:
		f[key], from[key] = v, where
	case old != v && strict:
		return fmt.Errorf("%s (%s): %s %q, but %s gave %q", where, node, fact, v, from[key], old)
	}
	return nil
}

// norm trims v and makes each run of white space one space.
func norm(v string) string { return strings.Join(strings.Fields(v), " ") }

// Change is one fact whose value differs between two runs.
type Change struct {
	Key    string `json:"key"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Changes are the facts both runs recorded whose values differ, by key. A
// fact only one of them has is no change: a node that is not in the
// other run's pair, or a fact an older harness did not read; a run with
// no facts (stored before the store kept them) gives none.
func Changes(before, after Facts) []Change {
	var cs []Change
	for k, a := range after {
		if b, ok := before[k]; ok && b != a {
			cs = append(cs, Change{Key: k, Before: b, After: a})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Key < cs[j].Key })
	return cs
}

// EnvNote is the sentence that names the environment's changes from the
// run before to this one, "" when none: "environment changed at this run:
// kernel of compute2 6.1.0-27 → 6.1.0-28; Nova microversions 2.1 to 2.95
// → 2.1 to 2.96". The same change on several nodes is one clause ("kernel
// of compute1, compute2 and 3 more 6.1.0-27 → 6.1.0-28").
func EnvNote(before, after Facts) string {
	cs := Changes(before, after)
	if len(cs) == 0 {
		return ""
	}
	type clause struct {
		label, before, after string
		nodes                []string
	}
	var order []*clause
	byKey := map[[3]string]*clause{}
	for _, c := range cs {
		label, node := factLabel(c.Key)
		k := [3]string{label, c.Before, c.After}
		cl, ok := byKey[k]
		if !ok {
			cl = &clause{label: label, before: c.Before, after: c.After}
			byKey[k] = cl
			order = append(order, cl)
		}
		if node != "" {
			cl.nodes = append(cl.nodes, node)
		}
	}
	// the run's own facts first, then the nodes', each by label
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if (len(a.nodes) > 0) != (len(b.nodes) > 0) {
			return len(a.nodes) == 0
		}
		return strings.ToLower(a.label) < strings.ToLower(b.label)
	})
	parts := make([]string, len(order))
	for i, cl := range order {
		s := cl.label
		if n := len(cl.nodes); n > 0 {
			const shown = 3
			names := strings.Join(cl.nodes[:min(n, shown)], ", ")
			if n > shown {
				names += fmt.Sprintf(" and %d more", n-shown)
			}
			s += " of " + names
		}
		b, a := cl.before, cl.after
		if cl.label == factLabels[FactHarness] {
			b, a = shortCommit(b), shortCommit(a)
		}
		parts[i] = fmt.Sprintf("%s %s → %s", s, b, a)
	}
	return "environment changed at this run: " + strings.Join(parts, "; ")
}

// factLabel names a fact key for EnvNote, with its node for a hypervisor
// fact ("hv.cmp1.example.firmware.running" is "NIC firmware running" of
// "cmp1.example"); an unknown key is its own label.
func factLabel(key string) (label, node string) {
	if l, ok := factLabels[key]; ok {
		return l, ""
	}
	if rest, ok := strings.CutPrefix(key, "hv."); ok {
		best := -1
		for i, h := range HypervisorFacts {
			if strings.HasSuffix(rest, "."+h.Key) && (best < 0 || len(h.Key) > len(HypervisorFacts[best].Key)) {
				best = i
			}
		}
		if best >= 0 {
			h := HypervisorFacts[best]
			return h.Label, strings.TrimSuffix(rest, "."+h.Key)
		}
		if i := strings.LastIndex(rest, "."); i > 0 {
			return rest[i+1:], rest[:i]
		}
	}
	return key, ""
}

// shortCommit is a commit as git abbreviates it, 12 hex digits, with what
// follows it ("(modified)").
func shortCommit(v string) string {
	rev, rest, _ := strings.Cut(v, " ")
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return strings.TrimSpace(rev + " " + rest)
}
