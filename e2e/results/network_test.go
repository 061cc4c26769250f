package results

import (
	"strings"
	"testing"
)

// Neutron's tenant MTUs over IPv4 (type_tunnel.get_mtu less the type's
// header): a 1500 underlay gives VXLAN 1450 and OVN's Geneve 1442, the
// lab's 9000 gives 8950 and 8942.
func TestEncapOverheadIsNeutronsArithmetic(t *testing.T) {
	for _, c := range []struct {
		typ              string
		underlay, tenant int
	}{
		{NetworkVXLAN, 1500, 1450}, {NetworkVXLAN, 9000, 8950},
		{NetworkGeneve, 1500, 1442}, {NetworkGeneve, 9000, 8942},
		{NetworkGRE, 1500, 1458},
		{NetworkVLAN, 9000, 9000}, {NetworkFlat, 1500, 1500}, {"local", 1500, 1500},
	} {
		if got := c.underlay - EncapOverhead(c.typ); got != c.tenant {
			t.Errorf("%s on %d: %d, want %d", c.typ, c.underlay, got, c.tenant)
		}
	}
	for typ, want := range map[string][2]uint64{NetworkGeneve: {1, 16777215}, NetworkVXLAN: {1, 16777215}, NetworkVLAN: {1, 4094}, NetworkGRE: {1, 4294967295}} {
		if lo, hi, ok := SegmentationRange(typ); !ok || lo != want[0] || hi != want[1] {
			t.Errorf("%s: %d-%d %v", typ, lo, hi, ok)
		}
	}
	if _, _, ok := SegmentationRange(NetworkFlat); ok {
		t.Error("flat has no segmentation id")
	}
}

// The network's type and segmentation id are optional keys: written when
// known, absent otherwise, and a file with them loads.
func TestEnvironmentNetworkKeys(t *testing.T) {
	doc := `{"schema_version": 1, "run_id": "ovn", "started_at": "2026-12-03T10:00:00Z",
		"config": {"cloud": "c", "build_label": "", "expected_path": "asap2", "profiles": [], "duration_seconds": 30, "repeats": 1, "checks": []},
		"environment": {"cloud": "", "build_label": "", "hypervisors": [{"name": "cmp-1", "nic_driver": "", "nic_firmware": "", "ovs_version": "3.1.0", "ovn_controller_version": "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)", "kernel": ""}], "guests": [], "mtu": 8942, "network_type": "geneve", "segmentation_id": "1234", "network_backend": "ml2/ovn", "network_agents": ["OVN Controller agent: 2"], "guest_kernel": "", "insecure_host_keys": false},
		"profiles": [], "offload": [], "timings": [], "thresholds": [], "errors": []}`
	r, err := Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if r.Environment.NetworkType != NetworkGeneve || r.Environment.SegmentationID != "1234" || r.Environment.NetworkBackend != "ml2/ovn" ||
		len(r.Environment.NetworkAgents) != 1 || r.Environment.Hypervisors[0].OVNControllerVersion == "" {
		t.Errorf("got %+v", r.Environment)
	}
	old, err := Decode([]byte(strings.NewReplacer(`"network_type": "geneve", "segmentation_id": "1234", `, "", `"network_backend": "ml2/ovn", "network_agents": ["OVN Controller agent: 2"], `, "", `"ovn_controller_version": "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)", `, "").Replace(doc)))
	if err != nil || old.Environment.NetworkType != "" {
		t.Errorf("a file without them: %v %+v", err, old)
	}
}
