package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// latencyFile is testdata/minimal.yaml plus extra, written here.
func latencyFile(t *testing.T, extra string) string {
	t.Helper()
	base, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "latency.yaml")
	if err := os.WriteFile(file, append(base, []byte(extra)...), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestLatencyDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(latencyFile(t, ""), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := Latency{Profiles: []string{"lat-idle", "lat-load", "lat-first"}, MessageSize: 64, Duration: 10 * time.Second, Port: 11111,
		Grace: 10 * time.Second, LoadProfile: "tcp-p1", Settle: 3 * time.Second, FirstPacketFlows: 5, FirstPacketPings: 10, FirstPacketIdle: 12 * time.Second}
	if !reflect.DeepEqual(cfg.Latency, want) {
		t.Errorf("defaults %+v\nwant %+v", cfg.Latency, want)
	}
	// An explicit empty list selects none.
	cfg, err = Load(latencyFile(t, "latency:\n  profiles: []\n"), WithGetenv(noEnv))
	if err != nil || len(cfg.Latency.Profiles) != 0 || slices.Contains(cfg.Latency.Profiles, results.LatencyIdleID) {
		t.Fatalf("profiles: [] = %v, %v", cfg.Latency.Profiles, err)
	}
}

func TestLatencyBadValuesAllAtOnce(t *testing.T) {
	fakeHome(t)
	file := latencyFile(t, `latency:
  profiles: [lat-idle, lat-idle, lat-jitter, lat-load, lat-first]
  message_size: 8
  duration: 1500ms
  port: 5202
  grace: 0s
  load_profile: tcp-p99
  settle: -1s
  first_packet_flows: 0
  first_packet_pings: 1
  first_packet_idle: 0s
thresholds:
  - {name: p99, profile: tcp-p1, path: baseline, metric: latency_p99_us, op: "<=", value: 100}
  - {name: p99b, profile: lat-idle, path: baseline, metric: latency_p99_us, op: "<=", value: 0}
`)
	_, err := Load(file, WithGetenv(noEnv), KnownProfiles("tcp-p1"))
	if err == nil {
		t.Fatal("bad latency values accepted")
	}
	for _, want := range []string{
		`latency.profiles[1]: is repeated, got "lat-idle"`,
		`latency.profiles[2]: must be one of lat-idle, lat-load, lat-first, got "lat-jitter"`,
		"latency.message_size: must be 14..65507 bytes (sockperf -m: its header .. one UDP datagram), got 8",
		"latency.duration: must be whole seconds >= 1 (sockperf -t), got 1.5s",
		"latency.port: must not be one of the iperf3 ports of the load (traffic.port 5201 and the next ones), got 5202",
		"latency.grace: ",
		`latency.load_profile: is not a known profile (known: tcp-p1), got "tcp-p99"`,
		"latency.settle: must be >= 0, got -1s",
		"latency.first_packet_flows: must be >= 1, got 0",
		"latency.first_packet_pings: must be >= 2 (the first echo is the miss, the others the steady state), got 1",
		"latency.first_packet_idle: ",
		`thresholds[0].profile: must be one of lat-idle, lat-load, lat-first, got "tcp-p1"`,
		"thresholds[1].value: must be > 0 for latency_p99_us (microseconds, round trip), got 0",
	} {
		if !strings.Contains(err.Error(), file+": "+want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
