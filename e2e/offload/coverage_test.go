package offload

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readCoverage(t *testing.T, name string) Coverage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "coverage", name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCoverage(string(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

func TestParseCoverageRecorded(t *testing.T) {
	for _, tc := range []struct {
		file     string
		counters int
		never    int
		want     map[string]uint64
	}{
		{"ovs-3.1-lab-zed-hv1.txt", 53, 98, map[string]uint64{"netdev_received": 23599, "xlate_actions": 438, "util_xalloc": 7112723}},
		{"ovs-3.1-openflow-drop.txt", 0, 103, map[string]uint64{"drop_action_of_pipeline": 20, "datapath_drop_upcall_error": 1}},
		{"ovs-3.1-openflow-drop-after-5s.txt", 0, 0, map[string]uint64{"drop_action_of_pipeline": 20}},
		{"ovs-3.1-tunnel-neigh-miss-after.txt", 0, 0, map[string]uint64{"drop_action_of_pipeline": 46}},
	} {
		c := readCoverage(t, tc.file)
		if tc.counters > 0 && len(c.Totals) != tc.counters {
			t.Errorf("%s: %d counters, want %d", tc.file, len(c.Totals), tc.counters)
		}
		if tc.never > 0 && c.NeverHit != tc.never {
			t.Errorf("%s: %d never hit, want %d", tc.file, c.NeverHit, tc.never)
		}
		for k, v := range tc.want {
			if c.Totals[k] != v {
				t.Errorf("%s: %s = %d, want %d", tc.file, k, c.Totals[k], v)
			}
		}
	}
}

// The lab's switch dropped nothing; the tunnel whose next hop does not answer dropped 22
// packets between the two readings, and the other counters that moved are not drops.
func TestDropsBetweenRecorded(t *testing.T) {
	lab := readCoverage(t, "ovs-3.1-lab-zed-hv1.txt")
	if ds, err := DropsBetween(lab, lab); err != nil || ds != nil {
		t.Errorf("a reading against itself: %v, %v; want none", ds, err)
	}
	before := readCoverage(t, "ovs-3.1-tunnel-neigh-miss-before.txt")
	after := readCoverage(t, "ovs-3.1-tunnel-neigh-miss-after.txt")
	ds, err := DropsBetween(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]uint64{"drop_action_of_pipeline": 22}; !maps.Equal(ds, want) {
		t.Errorf("drops %v, want %v", ds, want)
	}
	// Read the other way round, the counters went down: a restart, not a negative drop.
	if _, err := DropsBetween(after, before); err == nil || !strings.Contains(err.Error(), "drop_action_of_pipeline 46 → 24") {
		t.Errorf("counters that shrank: %v", err)
	}
	// A counter new in the second reading (never hit before) counts from zero.
	fresh := readCoverage(t, "ovs-3.1-openflow-drop.txt")
	ds, err = DropsBetween(lab, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]uint64{"drop_action_of_pipeline": 20, "datapath_drop_upcall_error": 1}; !maps.Equal(ds, want) {
		t.Errorf("drops %v, want %v", ds, want)
	}
}

func TestIsDropCounter(t *testing.T) {
	for name, want := range map[string]bool{
		"drop_action_of_pipeline": true, "datapath_drop_upcall_error": true, "datapath_drop_tunnel_pop_error": true,
		"netdev_push_header_drops": true, "netdev_send_prepare_drops": true, "netdev_soft_seg_drops": true,
		"netdev_received": false, "xlate_actions": false, "dpif_flow_del": false, "conntrack_full": false,
	} {
		if IsDropCounter(name) != want {
			t.Errorf("IsDropCounter(%s) = %v, want %v", name, !want, want)
		}
	}
}

func TestParseCoverageRefuses(t *testing.T) {
	for _, tc := range []struct{ name, out, want string }{
		{"empty", "", `no "Event coverage" header`},
		{"cut short", "Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=1:\nxlate_actions 0.0/sec 0.0/sec 0.0/sec total: 3\n", `no "events never hit" line`},
		{"bad total", "Event coverage, hash=1:\nxlate_actions 0.0/sec 0.0/sec 0.0/sec total: -3\n9 events never hit\n", `total "-3" is not a count`},
		{"bad rate", "Event coverage, hash=1:\nxlate_actions 0.0 0.0/sec 0.0/sec total: 3\n9 events never hit\n", `rate "0.0" is not <number>/sec`},
		{"twice", "Event coverage, hash=1:\nx 0.0/sec 0.0/sec 0.0/sec total: 3\nx 0.0/sec 0.0/sec 0.0/sec total: 4\n9 events never hit\n", "counter x listed twice"},
		{"an error instead", "ovs-appctl: cannot connect to \"/run/openvswitch/ovs-vswitchd.1.ctl\" (No such file or directory)\n", "want <counter>"},
	} {
		_, err := ParseCoverage(tc.out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.name, err, tc.want)
		}
	}
	// Every problem at once.
	_, err := ParseCoverage("x 1/sec\ny 0.0/sec 0.0/sec 0.0/sec total: z\n")
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "header") {
		t.Errorf("all problems at once: %v", err)
	}
}
