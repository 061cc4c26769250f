package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Absent = no connection-scale profile; present, the duration and the
// offload wait default to 10 s each.
func TestConnectionsDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(latencyFile(t, ""), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Connections.Counts) != 0 {
		t.Errorf("absent section: counts %v, want none", cfg.Connections.Counts)
	}
	cfg, err = Load(latencyFile(t, "connections:\n  counts: [1, 100, 10000]\n"), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := Connections{Counts: []int{1, 100, 10000}, Duration: 10 * time.Second, OffloadWait: 10 * time.Second}
	if !reflect.DeepEqual(cfg.Connections, want) {
		t.Errorf("got %+v, want %+v", cfg.Connections, want)
	}
	if iv := cfg.Interval(IntervalConntrackSample); iv.Poll != time.Second || iv.Timeout != 5*time.Second {
		t.Errorf("intervals.conntrack_sample default %+v", iv)
	}
	// 10000 connections fit the ports the data security group admits.
	if ConnectionProcesses(10000) != 79 || ConnectionProcesses(10000) > IperfPorts || ConnectionProcesses(1) != 1 || ConnectionProcesses(129) != 2 {
		t.Errorf("processes: 10000 -> %d, 1 -> %d, 129 -> %d (ports %d)", ConnectionProcesses(10000), ConnectionProcesses(1), ConnectionProcesses(129), IperfPorts)
	}
}

// Every problem of the section at once, each with its key and value.
func TestConnectionsBadValues(t *testing.T) {
	home := fakeHome(t)
	file := latencyFile(t, `traffic:
  port: 65500
intervals:
  conntrack_sample: {timeout: 5s, poll: 2s}
connections:
  counts: [0, 100, 100, 10241, 5000]
  duration: 1500ms
  offload_wait: 2s
  bitrate_per_connection: -1
`)
	_, err := Load(file, WithGetenv(noEnv))
	assertMessages(t, err, []string{
		file + ": connections.counts[0]: must be 1..10240 (80 iperf3 processes of 128 streams, the ports the data security group admits), got 0",
		file + ": connections.counts[2]: is repeated, got 100",
		file + ": connections.counts[3]: must be 1..10240 (80 iperf3 processes of 128 streams, the ports the data security group admits), got 10241",
		file + ": connections.bitrate_per_connection: must be >= 0 bit/s (0 = unlimited), got -1",
		file + ": connections.duration: must be whole seconds >= 1 (iperf3 -t), got 1.5s",
		file + ": traffic.port: must leave room for the 40 iperf3 ports of connections.counts 5000: at most 65496, got 65500",
		file + ": connections.offload_wait: must be longer than intervals.conntrack_sample.poll (2s): the tables are read every poll within it, got 2s",
	}, home)
}

// lab/harness.yaml runs the connection-scale profile in make lab, each
// connection capped (uncapped, N=1000 overran its bound on the 2-core lab).
func TestLabConnectionsBlock(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "lab", "harness.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const labKey = "/var/lib/asap2lab/ssh/id_ed25519"
	key := filepath.Join(fakeHome(t), ".ssh", "id_ed25519")
	path := filepath.Join(t.TempDir(), "harness.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), labKey, key)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, WithGetenv(noEnv))
	if err != nil {
		t.Fatalf("lab/harness.yaml: %v", err)
	}
	if cc := cfg.Connections; len(cc.Counts) == 0 || cc.BitratePerConnection <= 0 {
		t.Errorf("lab/harness.yaml connections %+v: want counts, each connection capped", cc)
	}
}

// A threshold on the offloaded share or the time to offload names a
// connection-scale profile the config runs; any other profile is refused
// with the ones it could name.
func TestConnectionThresholdProfiles(t *testing.T) {
	home := fakeHome(t)
	gate := func(profile, metric string, v float64) string {
		return "  - {name: " + profile + "-" + metric + ", profile: " + profile + ", path: asap2, metric: " + metric + ", op: \">=\", value: " + strconv.FormatFloat(v, 'g', -1, 64) + "}\n"
	}
	ok := latencyFile(t, "connections:\n  counts: [1, 1000]\nthresholds:\n"+gate("connections-1000", "offloaded_share", 0.99)+gate("connections-1", "time_to_offload_seconds", 0.5))
	if _, err := Load(ok, WithGetenv(noEnv)); err != nil {
		t.Fatalf("gates on the counts run: %v", err)
	}
	bad := latencyFile(t, "connections:\n  counts: [1, 1000]\nthresholds:\n"+gate("connections-100", "offloaded_share", 0.99)+gate("tcp-p1", "offloaded_share", 0.5)+gate("connections-1", "offloaded_share", 1.5))
	_, err := Load(bad, WithGetenv(noEnv))
	assertMessages(t, err, []string{
		bad + ": thresholds[0].profile: must name a connection-scale profile this config runs for offloaded_share (connections-<N> for N in connections.counts: [connections-1 connections-1000]), got \"connections-100\"",
		bad + ": thresholds[1].profile: must name a connection-scale profile this config runs for offloaded_share (connections-<N> for N in connections.counts: [connections-1 connections-1000]), got \"tcp-p1\"",
		bad + ": thresholds[2].value: must be between 0 and 1 for offloaded_share (a share: 0.99 = 99 % of the connections offloaded), got 1.5",
	}, home)
}
