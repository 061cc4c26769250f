package results

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func conn(n int, path Path, hosts ...ConnectionHost) ConnectionResult {
	procs := (n + 127) / 128
	return ConnectionResult{N: n, Path: path, Processes: procs, Opened: n + procs, DurationSeconds: 10, OffloadWaitSeconds: 10, DeliveredBps: 9e9, Hosts: hosts}
}

func TestConnectionsRoundTripAndOldFiles(t *testing.T) {
	w, err := NewWriter(filepath.Join(t.TempDir(), "results.json"), *latFile())
	if err != nil {
		t.Fatal(err)
	}
	at := 2.0
	if err := w.PutConnection(conn(1000, PathASAP2, ConnectionHost{Hypervisor: "cmp-1", Source: "kernel", Found: 1008, Offloaded: 620, Share: 620.0 / 1008, Samples: 9, Reason: "r"})); err != nil {
		t.Fatal(err)
	}
	if err := w.PutConnection(conn(1, PathASAP2, ConnectionHost{Hypervisor: "cmp-1", Source: "kernel", Found: 2, Offloaded: 2, Share: 1, TimeToOffloadSeconds: &at, Samples: 9})); err != nil {
		t.Fatal(err)
	}
	at = 99 // the writer keeps its own copy: the next write must not see it
	again := conn(1000, PathASAP2)
	again.NotApplicable = "not applicable"
	if err := w.PutConnection(again); err != nil { // replaces, same n and path
		t.Fatal(err)
	}
	snap := w.Snapshot()
	*snap.Connections[1].Hosts[0].TimeToOffloadSeconds = 50 // a snapshot is a copy
	r, err := Load(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Connections) != 2 || r.Connections[0].NotApplicable == "" || *r.Connections[1].Hosts[0].TimeToOffloadSeconds != 2 {
		t.Fatalf("loaded %+v", r.Connections)
	}
	b, _ := json.Marshal(latFile())
	if strings.Contains(string(b), `"connections"`) {
		t.Fatal("an empty connections list is written")
	}
	if _, err := Decode(b); err != nil {
		t.Fatalf("old file: %v", err)
	}
}

func TestConnectionsValidation(t *testing.T) {
	na := conn(10, PathASAP2, ConnectionHost{Hypervisor: "h"})
	na.NotApplicable = "port security off"
	short := conn(100, PathASAP2)
	short.Opened = 50
	over := conn(1, PathBaseline, ConnectionHost{Hypervisor: "", Share: 1.5, Offloaded: 9})
	err := Validate(&Results{SchemaVersion: SchemaVersion, RunID: "r1", Config: ConfigSummary{ExpectedPath: PathBaseline},
		Connections: []ConnectionResult{na, short, over, conn(10, PathASAP2), conn(5, "")}})
	for _, want := range []string{
		"connections[0]: a share not applicable (port security off) with 1 hypervisors' shares",
		"connections[1]: n and processes must be >= 1 and opened >= n, got n 100 processes 1 opened 50",
		"connections[2].hosts[0].hypervisor: must be set",
		"connections[2].hosts[0]: share must be 0..1 and offloaded 0..opened (2), got share 1.5 offloaded 9",
		"connections[3]: n 10 path asap2 duplicates connections[0]",
		`connections[4].path: must be asap2 or baseline, got ""`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	}
}
