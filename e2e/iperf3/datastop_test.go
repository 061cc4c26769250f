package iperf3

import (
	"testing"
	"time"
)

// When a client last moved data, from its own JSON: clients whose path was
// cut mid-test (testdata/stall/README.md) and the parser's samples.

func TestClientDataStop(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		data       []byte
		ok         bool
		at         string // HH:MM:SS UTC; "" = no data at all
		stalled    bool
	}{
		// Path cut 3 s into an 8 s test: one more second of buffered data, then
		// four intervals with 0 bytes (cut at 15:57:10, timestamp 15:57:07).
		{name: "path cut", file: "stall/v3.12-tcp-p1-path-cut.json", ok: true, at: "15:57:11", stalled: true},
		// The lab's own case: the server guest's data port deleted 20 s into a
		// 40 s window (the delete took effect at 16:12:56), the client killed
		// at the harness's bound.
		{name: "lab: data port deleted", file: "stall/v3.12-lab-port-deleted.json", ok: true, at: "16:12:56", stalled: true},
		// -O 2: the measured intervals restart at 0 after the warm-up; the path
		// was cut at 15:58:58.68, 2 s into the measured part.
		{name: "path cut after a warm-up", file: "stall/v3.12-tcp-p1-O2-path-cut.json", ok: true, at: "15:58:58", stalled: true},
		// SIGINT 3 s into a 10 s test: data to the last interval, but the
		// intervals end far short of the requested duration.
		{name: "interrupted", file: "v3.12-interrupted.json", ok: true, at: "09:17:09", stalled: true},
		{name: "complete run", file: "v3.12-tcp-p1.json", ok: true, stalled: false},
		{name: "refused: no interval", file: "v3.12-refused.json", ok: false},
		{name: "not JSON", data: []byte("iperf3: error - unable to connect to server\n"), ok: false},
		{name: "empty", data: nil, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			if tc.file != "" {
				data = load(t, tc.file)
			}
			ds, ok := clientDataStop(data)
			if ok != tc.ok {
				t.Fatalf("ok = %t, want %t (%+v)", ok, tc.ok, ds)
			}
			if !ok {
				return
			}
			if ds.Stalled != tc.stalled {
				t.Errorf("stalled = %t, want %t (%+v)", ds.Stalled, tc.stalled, ds)
			}
			if tc.at != "" && ds.Last.Format("15:04:05") != tc.at {
				t.Errorf("last data at %s, want %s", ds.Last.Format(time.RFC3339Nano), tc.at)
			}
		})
	}
}

func TestDescribeDataStop(t *testing.T) {
	cut, complete := load(t, "stall/v3.12-tcp-p1-path-cut.json"), load(t, "v3.12-tcp-p1.json")
	proc := func(data ...[]byte) Measurement {
		var m Measurement
		for _, d := range data {
			m.Processes = append(m.Processes, ProcessRun{ClientJSON: d})
		}
		return m
	}
	for _, tc := range []struct {
		name string
		m    Measurement
		want string
	}{
		{"one cut process", proc(cut), "iperf3 client on vm1 stopped receiving at 15:57:11"},
		// Split over processes: one of them stalled is enough, the latest data counts.
		{"a cut and a complete process", proc(complete, cut), "iperf3 client on vm1 stopped receiving at 15:57:11"},
		{"complete", proc(complete), ""},
		{"no output", proc(nil), ""},
		{"no process", Measurement{}, ""},
	} {
		if got := DescribeDataStop("vm1", tc.m); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
