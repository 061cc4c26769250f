package remote

import (
	"maps"
	"os"
	"slices"
	"testing"
)

// Recorded on this project's Debian 12 machine (iproute2 6.1.0, net-tools 2.10) in a network
// namespace of its own, with TCP listeners on 127.0.0.1:5201, 0.0.0.0:5202, [::1]:5203 and UDP
// sockets on 127.0.0.1:11111, [::]:11112 (testdata/README.md).
func TestListeningPortsRecorded(t *testing.T) {
	for file, want := range map[string][]int{
		"ss-ltn.txt":      {5201, 5202, 5203},
		"netstat-ltn.txt": {5201, 5202, 5203},
		"ss-lun.txt":      {11111, 11112},
		"netstat-lun.txt": {11111, 11112},
	} {
		out, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(ListeningPorts(out))); !slices.Equal(got, want) {
			t.Errorf("%s: ports %v, want %v", file, got, want)
		}
	}
	if got := ListeningPorts([]byte("State  Recv-Q Send-Q Local Address:Port Peer Address:PortProcess\n")); len(got) != 0 {
		t.Errorf("a header alone: %v", got)
	}
	if ListenCommand("tcp") != "ss -ltn 2>/dev/null || netstat -ltn" || ListenCommand("udp") != "ss -lun 2>/dev/null || netstat -lun" {
		t.Errorf("commands: %q, %q", ListenCommand("tcp"), ListenCommand("udp"))
	}
}
