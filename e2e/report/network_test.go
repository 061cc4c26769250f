package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The environment names the data network's type and segmentation id, and
// beside a tunnel network's MTU the underlay MTU it needs (Neutron's own
// arithmetic: results.EncapOverhead), so that a Geneve run on OVN and a
// VXLAN run on OVS read differently where their numbers are shown.
func TestEnvironmentNetworkRows(t *testing.T) {
	file := func(typ, seg string, mtu int) *results.Results {
		return &results.Results{SchemaVersion: results.SchemaVersion, RunID: typ,
			Config:      results.ConfigSummary{ExpectedPath: results.PathASAP2},
			Environment: results.Environment{MTU: mtu, NetworkType: typ, SegmentationID: seg}}
	}
	s := &Set{Files: []*results.Results{
		file("geneve", "1234", 8942), file("vxlan", "77", 8950), file("vlan", "101", 9000), file("", "", 1442),
	}}
	want := map[string][]string{
		"MTU":          {"8942 (underlay ≥ 9000: geneve over IPv4 takes 58)", "8950 (underlay ≥ 9000: vxlan over IPv4 takes 50)", "9000", "1442"},
		"Data network": {"geneve, segmentation id 1234", "vxlan, segmentation id 77", "vlan, segmentation id 101", "—"},
	}
	found := 0
	for _, row := range EnvironmentRows(s) {
		w, ok := want[row[0]]
		if !ok {
			continue
		}
		found++
		if strings.Join(row[1:], "|") != strings.Join(w, "|") {
			t.Errorf("%s: got %q, want %q", row[0], row[1:], w)
		}
	}
	if found != len(want) {
		t.Errorf("found %d of the rows %v", found, want)
	}
}

// The backend the run met is named beside the numbers: Neutron's agents and
// each hypervisor's ovn-controller.
func TestEnvironmentBackendRows(t *testing.T) {
	ovn := &results.Results{SchemaVersion: results.SchemaVersion, RunID: "ovn", Config: results.ConfigSummary{ExpectedPath: results.PathASAP2},
		Environment: results.Environment{NetworkBackend: "ml2/ovn", NetworkAgents: []string{"OVN Controller agent: 2", "OVN Metadata agent: 2"},
			Hypervisors: []results.Hypervisor{{Name: "cmp-1", OVNControllerVersion: "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)"}, {Name: "cmp-2", OVNControllerVersion: "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)"}}}}
	ovs := &results.Results{SchemaVersion: results.SchemaVersion, RunID: "ovs", Config: results.ConfigSummary{ExpectedPath: results.PathASAP2},
		Environment: results.Environment{NetworkBackend: "ml2/ovs", NetworkAgents: []string{"Open vSwitch agent: 2 (1 not alive)"}, Hypervisors: []results.Hypervisor{{Name: "cmp-3"}, {Name: "cmp-4"}}}}
	unknown := &results.Results{SchemaVersion: results.SchemaVersion, RunID: "old", Config: results.ConfigSummary{ExpectedPath: results.PathASAP2}}
	want := map[string][]string{
		"Network backend": {"ml2/ovn (OVN Controller agent: 2; OVN Metadata agent: 2)", "ml2/ovs (Open vSwitch agent: 2 (1 not alive))", "—"},
		"OVN controller":  {"23.03.1 (OVS library 3.1.0, SB schema 20.27.0)", "—", "—"},
	}
	found := 0
	for _, row := range EnvironmentRows(&Set{Files: []*results.Results{ovn, ovs, unknown}}) {
		if w, ok := want[row[0]]; ok {
			found++
			if strings.Join(row[1:], "|") != strings.Join(w, "|") {
				t.Errorf("%s: got %q, want %q", row[0], row[1:], w)
			}
		}
	}
	if found != len(want) {
		t.Errorf("found %d of the rows %v", found, want)
	}
}
