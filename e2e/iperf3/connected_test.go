package iperf3

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The streams of recorded runs (e2e/conntrack/testdata/ovs: iperf3 3.12 -P 4
// and -u -P 2, whose control connections the conntrack dumps beside them
// show from 44142 and 41626; testdata/: a run that failed before its test).
func TestConnected(t *testing.T) {
	ct := filepath.Join("..", "conntrack", "testdata", "ovs")
	for _, c := range []struct {
		file  string
		ports []uint16
	}{
		{filepath.Join(ct, "iperf3-tcp-p4.json"), []uint16{44156, 44172, 44176, 44188}},
		{filepath.Join(ct, "iperf3-udp-p2.json"), []uint16{55816, 34423}},
		{filepath.Join("testdata", "v3.12-tcp-p15.json"), nil},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Connected(b)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if c.ports != nil && (!slices.Equal(s.Ports, c.ports) || s.Client.String() != "198.18.212.1" || s.Server.String() != "198.18.212.2" || s.ServerPort != 5201) {
			t.Errorf("%s: %+v", c.file, s)
		}
		if c.ports == nil && len(s.Ports) != 15 {
			t.Errorf("%s: %d streams, want 15", c.file, len(s.Ports))
		}
	}
	for _, bad := range []struct{ name, doc, want string }{
		{"no streams", string(load(t, "v3.12-refused.json")), "no start.connected"},
		{"not JSON", "iperf3: error", "iperf3 output"},
		{"two servers", `{"start":{"connected":[{"local_host":"10.0.0.1","local_port":1,"remote_host":"10.0.0.2","remote_port":5201},{"local_host":"10.0.0.1","local_port":2,"remote_host":"10.0.0.3","remote_port":5201}]}}`, "start.connected[1]"},
		{"no port", `{"start":{"connected":[{"local_host":"10.0.0.1","local_port":0,"remote_host":"10.0.0.2","remote_port":5201}]}}`, "no pair of addresses and ports"},
	} {
		if _, err := Connected([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error with %q", bad.name, err, bad.want)
		}
	}
}
