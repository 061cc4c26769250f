package fakeremote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// The pair of the evidence-window tests: Servers[0] (the iperf3 server) on
// compute1, Servers[1] (the client, which also sends the flood ping) on
// compute2, with the MACs and addresses of the recorded software-path
// session (e2e/offload/testdata).
const (
	MACServer = "02:00:c6:12:d2:02"
	MACClient = "02:00:c6:12:d2:01"
)

// HVNames are the pair's hypervisors.
var HVNames = [2]string{"compute1", "compute2"}

// ReadFile reads a test data file, or fails the test.
func ReadFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("test data: %v", err)
	}
	return b
}

// PairTopology is the pair's topology.
func PairTopology() *fixtures.Topology {
	return &fixtures.Topology{
		RunID: "20261202t091530-3fa2", Prefix: "asap2e2e",
		Servers: []fixtures.Server{
			{ID: "5b0e7c1a-3d2f-4e6a-8b9c-0d1e2f3a4b01", Name: "asap2e2e-server", Hypervisor: HVNames[0], DataPortID: "6c1f2f9e-8a4b-4c1d-9f3e-2b7a5d0e1a01", DataMAC: MACServer, DataIP: "198.18.210.2"},
			{ID: "5b0e7c1a-3d2f-4e6a-8b9c-0d1e2f3a4b02", Name: "asap2e2e-client", Hypervisor: HVNames[1], DataPortID: "6c1f2f9e-8a4b-4c1d-9f3e-2b7a5d0e1a02", DataMAC: MACClient, DataIP: "198.18.210.1"},
		},
	}
}

// PairRunners are fake guests of topo's two servers and their hypervisors
// ("guest <name>", "hypervisor <name>"). The guests play iperf3 (Servers[1]
// the client of Servers[0]) and answer `iperf3 --version` with the
// `iperf ...` line of the recorded versions.txt under offloadTestdata
// (e2e/offload/testdata), and `ip -o link show` with links, the listing of
// e2e/harness/testdata/ip-o-link-addr.txt, their data MAC in place of its
// fa:16:3e:aa:bb:cc.
func PairRunners(t testing.TB, w *World, topo *fixtures.Topology, offloadTestdata, links string) (guests, hvs [2]*Runner) {
	t.Helper()
	version := ""
	for _, l := range strings.Split(string(ReadFile(t, filepath.Join(offloadTestdata, "sw", "versions.txt"))), "\n") {
		if strings.HasPrefix(l, "iperf ") {
			version = l + "\n"
		}
	}
	for i, srv := range topo.Servers {
		g := New("guest "+srv.Name, w)
		g.Play = &IperfPlay{Addr: srv.DataIP}
		g.On("iperf3 --version", Reply{Stdout: []byte(version)})
		g.On("ip -o link show", Reply{Stdout: []byte(strings.ReplaceAll(links, "fa:16:3e:aa:bb:cc", srv.DataMAC))})
		guests[i] = g
		hvs[i] = New("hypervisor "+srv.Hypervisor, w)
	}
	guests[1].Play.Peer = guests[0]
	return guests, hvs
}
