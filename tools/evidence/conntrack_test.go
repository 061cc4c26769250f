package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Inputs: e2e/conntrack/testdata (README there: hw/ and sw/ from public
// material, ovs/ recorded on this machine).
var ctTD = filepath.Join("..", "..", "e2e", "conntrack", "testdata")

func TestConntrack(t *testing.T) {
	code, m, stderr := runCmd(t, "conntrack", "--flow", "tcp,1.1.1.17,1.1.1.16,5001,2", filepath.Join(ctTD, "hw", "proc-hw-offload-mlx5-2020.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	j, _ := m["judgement"].(map[string]any)
	if m["format"] != "kernel" || j["offloaded"] != true || j["hardware"] != 2.0 || len(m["connections"].([]any)) != 2 {
		t.Errorf("hardware table: %v", m)
	}

	code, m, _ = runCmd(t, "conntrack", "--flow", "tcp,198.18.212.1,198.18.212.2,5201,5", "--flow", "udp,198.18.212.1,198.18.212.2,5201,2", filepath.Join(ctTD, "ovs", "dump-conntrack-udp.txt"))
	j, _ = m["judgement"].(map[string]any)
	if code != 0 || m["format"] != "ovs" || j["offloaded"] != false || j["software"] != 3.0 || j["stale"] != 5.0 {
		t.Errorf("ovs table: exit %d %v", code, m)
	}

	// Without --flow: the table's owners only.
	code, m, _ = runCmd(t, "conntrack", filepath.Join(ctTD, "sw", "proc-offload-flowtable-2018.txt"))
	if owners, _ := m["by_owner"].(map[string]any); code != 0 || owners["software flowtable"] != 1.0 || m["judgement"] != nil {
		t.Errorf("owners: exit %d %v", code, m)
	}

	for _, args := range [][]string{
		{"conntrack", "--flow", "tcp,1.1.1.17,1.1.1.16,5001", filepath.Join(ctTD, "hw", "proc-hw-offload-mlx5-2020.txt")},
		{"conntrack", "--flow", "icmp,1.1.1.17,1.1.1.16,0,1", filepath.Join(ctTD, "hw", "proc-hw-offload-mlx5-2020.txt")},
		{"conntrack"},
	} {
		if code, _, stderr := runCmd(t, args...); code != 2 || !strings.Contains(stderr, "evidence:") {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("tcp 6 src=1.1.1.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "conntrack", bad); code != 1 || !strings.Contains(stderr, "bad.txt: conntrack table: line 1") {
		t.Errorf("unparsable table: exit %d %s", code, stderr)
	}
}

// Issue 33, class 3, offline: the tables of e2e/conntrack/testdata/hw
// with the recorded iperf3 client outputs beside them (ovs/).
// iperf3's client output (start.connected: the data streams'
// ports) tells the idle control connection from the data streams; the
// table is offloaded and the control connection named. Old code: exit 2
// (no --iperf3).
func TestConntrackIdleControlConnection(t *testing.T) {
	for _, c := range []struct{ table, iperf string }{
		{"proc-iperf3-tcp-p4-control-idle.txt", "iperf3-tcp-p4.json"},
		{"proc-iperf3-tcp-p4-control-gone.txt", "iperf3-tcp-p4.json"},
		{"proc-iperf3-udp-p2-control-idle.txt", "iperf3-udp-p2.json"},
	} {
		code, m, stderr := runCmd(t, "conntrack", "--iperf3", filepath.Join(ctTD, "ovs", c.iperf), filepath.Join(ctTD, "hw", c.table))
		if code != 0 {
			t.Errorf("%s: exit %d: %s", c.table, code, stderr)
			continue
		}
		j, _ := m["judgement"].(map[string]any)
		if j["offloaded"] != true || !strings.Contains(j["reason"].(string), "iperf3's control connection") {
			t.Errorf("%s: %v", c.table, j)
		}
	}
	// Without the client's output (--flow with its control connection
	// counted) a TCP flow's idle control connection cannot be told from a
	// data stream: inconclusive, never software.
	code, m, _ := runCmd(t, "conntrack", "--flow", "tcp,198.18.212.1,198.18.212.2,5201,5,1", filepath.Join(ctTD, "hw", "proc-iperf3-tcp-p4-control-idle.txt"))
	j, _ := m["judgement"].(map[string]any)
	if code != 0 || j["offloaded"] != false || j["software"] != 0.0 {
		t.Errorf("--flow alone: exit %d %v", code, j)
	}
	table := filepath.Join(ctTD, "hw", "proc-iperf3-tcp-p4-control-idle.txt")
	if code, _, stderr := runCmd(t, "conntrack", "--flow", "tcp,198.18.212.1,198.18.212.2,5201,5,x", table); code != 2 || !strings.Contains(stderr, "OPENED[,CONTROL]") && !strings.Contains(stderr, `"x"`) {
		t.Errorf("bad CONTROL: exit %d %s", code, stderr)
	}
	refused := filepath.Join(iperfTD, "v3.12-refused.json")
	if code, _, stderr := runCmd(t, "conntrack", "--iperf3", refused, table); code != 1 || !strings.Contains(stderr, refused) || !strings.Contains(stderr, "no start.connected") {
		t.Errorf("client output without streams: exit %d %s", code, stderr)
	}
}
