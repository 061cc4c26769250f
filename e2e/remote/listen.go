package remote

import (
	"strconv"
	"strings"
)

// "Is the server listening": the one look at a machine's listening sockets,
// for the iperf3 and sockperf runners' waits before a measured window.

// ListenCommand lists the sockets listening for proto ("tcp" or "udp"):
// `ss -ltn` / `ss -lun`, and netstat's same listing where ss is missing.
func ListenCommand(proto string) string {
	flags := "-ltn"
	if proto == "udp" {
		flags = "-lun"
	}
	return "ss " + flags + " 2>/dev/null || netstat " + flags
}

// ListeningPorts reads ListenCommand's output and returns the ports bound.
// The local address is the 4th column of both ss and netstat
// (testdata/ss-ltn.txt, netstat-ltn.txt: 127.0.0.1:5201, [::1]:5203,
// ::1:5203, *:11112); the port is what follows its last colon, so the
// headers ("Address:Port", "Local") name none.
func ListeningPorts(out []byte) map[int]bool {
	ports := map[int]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		i := strings.LastIndexByte(f[3], ':')
		if i < 0 {
			continue
		}
		if p, err := strconv.Atoi(f[3][i+1:]); err == nil {
			ports[p] = true
		}
	}
	return ports
}
