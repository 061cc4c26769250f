package iperf3

import (
	"encoding/json"
	"fmt"
	"net/netip"
)

// Streams is what an iperf3 client's -J output says of its data
// connections: start.connected, one object per stream and never the
// control connection (src/iperf_api.c: iperf_on_new_stream → connect_msg
// adds to json_connected; the control socket is opened before and has no
// entry):
//
//	"connected": [{"socket": 5, "local_host": "198.18.212.1", "local_port": 44156,
//	               "remote_host": "198.18.212.2", "remote_port": 5201}, ...]
type Streams struct {
	Client, Server netip.Addr
	ServerPort     uint16
	// Ports are the streams' client ports, in the order iperf3 listed them.
	Ports []uint16
}

// Connected reads start.connected of a client's -J output. An output
// without streams (a client that failed before its test) is an error, and
// so are streams that disagree on their addresses or server port.
func Connected(clientJSON []byte) (Streams, error) {
	var doc struct {
		Start *struct {
			Connected []struct {
				LocalHost  string `json:"local_host"`
				LocalPort  int    `json:"local_port"`
				RemoteHost string `json:"remote_host"`
				RemotePort int    `json:"remote_port"`
			} `json:"connected"`
		} `json:"start"`
	}
	var s Streams
	if err := json.Unmarshal(clientJSON, &doc); err != nil {
		return s, fmt.Errorf("iperf3 output: %w", err)
	}
	if doc.Start == nil || len(doc.Start.Connected) == 0 {
		return s, fmt.Errorf("iperf3 output: no start.connected: no stream was set up")
	}
	for i, c := range doc.Start.Connected {
		client, err1 := netip.ParseAddr(c.LocalHost)
		server, err2 := netip.ParseAddr(c.RemoteHost)
		if err1 != nil || err2 != nil || c.LocalPort < 1 || c.LocalPort > 65535 || c.RemotePort < 1 || c.RemotePort > 65535 {
			return s, fmt.Errorf("iperf3 output: start.connected[%d]: %s:%d -> %s:%d is no pair of addresses and ports", i, c.LocalHost, c.LocalPort, c.RemoteHost, c.RemotePort)
		}
		client, server = client.Unmap(), server.Unmap()
		if i == 0 {
			s.Client, s.Server, s.ServerPort = client, server, uint16(c.RemotePort)
		} else if client != s.Client || server != s.Server || uint16(c.RemotePort) != s.ServerPort {
			return s, fmt.Errorf("iperf3 output: start.connected[%d]: %s -> %s:%d, but stream 0 is %s -> %s:%d", i, client, server, c.RemotePort, s.Client, s.Server, s.ServerPort)
		}
		s.Ports = append(s.Ports, uint16(c.LocalPort))
	}
	return s, nil
}
