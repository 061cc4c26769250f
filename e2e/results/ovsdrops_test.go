package results

import (
	"path/filepath"
	"testing"
	"time"
)

func TestDropsLine(t *testing.T) {
	for _, tc := range []struct {
		ds   []OVSDrops
		want string
	}{
		{nil, ""},
		{[]OVSDrops{{Hypervisor: "compute1"}, {Hypervisor: "compute2"}}, ""},
		{[]OVSDrops{{Hypervisor: "compute1"}, {Hypervisor: "compute2", Drops: map[string]uint64{"datapath_drop_upcall_error": 1, "drop_action_of_pipeline": 22, "datapath_drop_meter": 22}}},
			"OVS counted drops during the window: compute2 datapath_drop_meter 22, drop_action_of_pipeline 22, datapath_drop_upcall_error 1"},
		{[]OVSDrops{{Hypervisor: "compute1", Error: "reading after the window: exit 1"}, {Hypervisor: "compute2", Drops: map[string]uint64{"drop_action_of_pipeline": 3}}},
			"OVS counted drops during the window: compute2 drop_action_of_pipeline 3; OVS drop counters not read on compute1 (reading after the window: exit 1)"},
		{[]OVSDrops{{Hypervisor: "compute1", Error: "e1"}, {Hypervisor: "compute2", Error: "e2"}}, "OVS drop counters not read on compute1 (e1), compute2 (e2)"},
	} {
		if got := DropsLine(tc.ds); got != tc.want {
			t.Errorf("DropsLine(%+v)\n got  %q\n want %q", tc.ds, got, tc.want)
		}
	}
}

// A repeat's ovs_drops survives the writer's copy and the strict loader.
func TestOVSDropsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	w, err := NewWriter(path, Results{SchemaVersion: SchemaVersion, RunID: "r1", StartedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	drops := []OVSDrops{{Hypervisor: "compute1"}, {Hypervisor: "compute2", Drops: map[string]uint64{"drop_action_of_pipeline": 22}}}
	pr := ProfileResult{ID: "tcp-p1", Name: "TCP 1 stream (-P1)", Protocol: ProtoTCP, Streams: 1, Path: PathBaseline,
		Runs: []Run{{Repeat: 1, DeliveredBps: 1e9, Intervals: []Interval{}, OVSDrops: drops}}}
	if err := w.PutProfile(pr); err != nil {
		t.Fatal(err)
	}
	drops[1].Drops["drop_action_of_pipeline"] = 99 // the writer kept its own copy
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d := got.Profiles[0].Runs[0].OVSDrops
	if len(d) != 2 || d[0].Drops != nil || d[1].Drops["drop_action_of_pipeline"] != 22 {
		t.Errorf("loaded %+v", d)
	}
}
