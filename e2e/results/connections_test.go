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

// The connection-scale gates: the share is the pair's worse side, the time
// its slower one; no share (port security off, a host never read, a failed
// profile, a host never fully offloaded for the time) fails the rule with
// the reason, never passes on nothing.
func TestConnectionThresholds(t *testing.T) {
	secs := func(v float64) *float64 { return &v }
	full := ConnectionHost{Hypervisor: "compute1", Source: "kernel", Found: 101, Offloaded: 101, Share: 1, Samples: 4, TimeToOffloadSeconds: secs(1.5), Reason: "all"}
	fell := ConnectionHost{Hypervisor: "compute2", Source: "kernel", Found: 101, Offloaded: 60, Share: 60.0 / 101, Samples: 4, Reason: "60 of 101"}
	slow := full
	slow.Hypervisor, slow.TimeToOffloadSeconds = "compute2", secs(4.25)
	unread := ConnectionHost{Hypervisor: "compute2", Reason: "ssh: connection refused"}
	na := conn(100, PathASAP2)
	na.NotApplicable = "not applicable: data_port.port_security is false"
	failed := conn(100, PathASAP2, full, full)
	failed.Error = "iperf3: connection refused"
	rule := func(metric, op string, v float64) ThresholdRule {
		return ThresholdRule{Name: "gate", Profile: "connections-100", Path: "asap2", Metric: metric, Op: op, Value: v}
	}
	for _, tc := range []struct {
		name   string
		res    ConnectionResult
		rule   ThresholdRule
		pass   bool
		actual float64 // when a value is expected
		reason string
	}{
		{"both full", conn(100, PathASAP2, full, slow), rule(MetricOffloadedShare, ">=", 0.99), true, 1, "offloaded share 100.0% (the lowest: compute1 101 of 101, compute2 101 of 101) meets >= 99.0%"},
		{"one side fell", conn(100, PathASAP2, full, fell), rule(MetricOffloadedShare, ">=", 0.99), false, 60.0 / 101, "offloaded share 59.4% (the lowest: compute1 101 of 101, compute2 60 of 101) violates >= 99.0%"},
		{"slower side", conn(100, PathASAP2, full, slow), rule(MetricTimeToOffload, "<=", 3), false, 4.25, "time to offload 4.2 s (the slowest: compute1 1.5 s, compute2 4.2 s) violates <= 3 s"},
		{"never offloaded", conn(100, PathASAP2, full, fell), rule(MetricTimeToOffload, "<=", 30), false, -1, "profile connections-100 asap2: compute2 never had every connection offloaded within 10s: 60 of 101"},
		{"no read kept", conn(100, PathASAP2, full, unread), rule(MetricOffloadedShare, ">=", 0.5), false, -1, "profile connections-100 asap2: compute2 has no conntrack read kept: ssh: connection refused"},
		{"port security off", na, rule(MetricOffloadedShare, ">=", 0.5), false, -1, "profile connections-100 asap2: the offloaded share is not applicable: data_port.port_security is false"},
		{"failed", failed, rule(MetricOffloadedShare, ">=", 0.5), false, -1, "profile connections-100 asap2 failed: iperf3: connection refused"},
		{"other N", conn(1000, PathASAP2, full, full), rule(MetricOffloadedShare, ">=", 0.5), false, -1, "no asap2 result for profile connections-100"},
		{"other path", conn(100, PathBaseline, full, full), rule(MetricOffloadedShare, ">=", 0.5), false, -1, "no asap2 result for profile connections-100"},
	} {
		f := &Results{Connections: []ConnectionResult{tc.res}}
		got := EvaluateThresholds([]ThresholdRule{tc.rule}, f)[0]
		if got.Pass != tc.pass || got.Reason != tc.reason {
			t.Errorf("%s: pass %v reason %q, want %v %q", tc.name, got.Pass, got.Reason, tc.pass, tc.reason)
		}
		switch {
		case tc.actual < 0 && got.Actual != nil:
			t.Errorf("%s: actual %v, want none", tc.name, *got.Actual)
		case tc.actual >= 0 && (got.Actual == nil || *got.Actual != tc.actual):
			t.Errorf("%s: actual %v, want %v", tc.name, got.Actual, tc.actual)
		}
	}
	// Rules that could never fail, or values outside the metric's range,
	// are refused.
	for _, r := range []ThresholdRule{rule(MetricOffloadedShare, ">=", 0), rule(MetricOffloadedShare, "<=", 1), rule(MetricOffloadedShare, ">=", 1.5), rule(MetricTimeToOffload, "<=", 0)} {
		if ValidateRule(r) == nil {
			t.Errorf("rule %s %s %v accepted", r.Metric, r.Op, r.Value)
		}
	}
}
