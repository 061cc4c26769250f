package offload

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Samples of the Open vSwitch releases MOSK ships (2.17, 3.3); their
// sources are in testdata/README.md ("OVS versions MOSK ships"). OVS's
// flow printer (lib/dpctl.c format_dpif_flow) is the same in v2.17.0 and
// v3.3.0: ufid, match, stats, offloaded:, dp:, actions:, dp-extra-info:.

// OVS 2.17.7, `ovs-appctl dpctl/dump-flows type=offloaded` on an OVN
// gateway with a ConnectX NIC (ovn-org/ovn#207): plain dump (no -m), so no
// offloaded:/dp: fields; the typed dump itself says they are in hardware.
func TestDpctlOVS217TypedOffloadedDump(t *testing.T) {
	flows := mustDpctl(t, "hw/dpctl-ovs2.17.7-ovn207-offloaded.txt")
	if len(flows) != 3 {
		t.Fatalf("%d flows, want 3", len(flows))
	}
	f0 := flows[0]
	if f0.Tunnel != "tun_id=0x1,src=172.31.1.21,dst=172.31.5.23,tp_dst=6081,geneve({class=0x102,type=0x80,len=4,0x10002/0x7fffffff}),flags(+key)" ||
		f0.InPort != "4" || f0.RecircID != "0" || f0.EthSrc != "ae:03:03:17:eb:df" || f0.EthDst != "ae:cd:cd:04:d7:d4" ||
		f0.Packets != 16764463 || f0.Bytes != 1542330596 || f0.Used != "0.000s" || f0.Offloaded != "" || f0.DP != "" ||
		f0.Actions != "set(eth(src=ae:a9:a9:0c:6f:c8,dst=88:2a:5e:a9:30:ab)),set(ipv4(ttl=62)),ct(zone=6,nat),recirc(0x85)" {
		t.Errorf("tunnel flow %+v", f0)
	}
	if ct, ok := f0.Field("ct_state"); !ok || ct != "-new-inv-trk" {
		t.Errorf("ct_state = %q, %v", ct, ok)
	}
	f1 := flows[1]
	if f1.Packets != 2491914653 || f1.Bytes != 3074457645572 || f1.EthSrc != "88:2a:5e:a9:30:ab" || f1.EthDst != "e8:eb:d3:3a:d7:f8" || f1.Actions != "1" {
		t.Errorf("flow 2 %+v", f1)
	}
	if got := flowHardware(f1, true); got != flowHW {
		t.Errorf("a flow of the typed offloaded dump: flowHardware = %q, want %q", got, flowHW)
	}
	pair := []string{"88:2a:5e:a9:30:ab", "e8:eb:d3:3a:d7:f8"}
	// One sample: used 0.640s / 0.730s ago, inside a 4 s window.
	runDpctlCases(t, []dpctlCase{
		{"OVS 2.17 typed dump, one sample, recent use", DpctlSamples{Offloaded: [][]DpctlFlow{flows}, OffloadedIsTyped: true, Window: 4 * time.Second},
			pair, results.VerdictOffloaded, []string{"used 0.640s ago"}},
	})
}

// OVS v2.17.0 and v3.3.0 docs: a userspace (netdev) datapath flow with
// masked MACs, a VLAN encap() match and dp-extra-info after the actions.
func TestDpctlOVSDocsUserspaceFlow(t *testing.T) {
	flows := mustDpctl(t, "ovs/dpctl-m-userspace-ovs-docs.txt")
	if len(flows) != 1 {
		t.Fatalf("%d flows", len(flows))
	}
	f := flows[0]
	if f.UFID != "82770b5d-ca38-44ff-8283-74ba36bd1ca5" || f.InPort != "pcap0" || f.EthType != "0x8100" ||
		f.Packets != 77072681 || f.Bytes != 3545343326 || f.DP != "ovs" || f.Offloaded != "" ||
		f.Actions != "vhostuserclient0" || f.DPExtraInfo != "miniflow_bits(4,1)" {
		t.Errorf("flow %+v", f)
	}
	if enc, ok := f.Field("encap"); !ok || !strings.HasPrefix(enc, "eth_type(0x0800),ipv4(") || !strings.HasSuffix(enc, "udp(src=53/0,dst=53/0)") {
		t.Errorf("encap = %q, %v", enc, ok)
	}
	if got := flowHardware(f, false); got != flowSoftware {
		t.Errorf("dp:ovs judged %q", got)
	}
}

// OVS v3.3.0's own test suite: `dpctl/dump-flows type=tc,offloaded` after
// its normalisation (MACs → eth(macs), ports → output): the fields the
// parser reads are still where it expects them.
func TestDpctlOVS33TestsuiteTCOffloaded(t *testing.T) {
	flows := mustDpctl(t, "hw/dpctl-ovs3.3.0-testsuite-tc-offloaded.txt")
	if len(flows) != 2 || flows[0].InPort != "2" || flows[1].InPort != "3" {
		t.Fatalf("flows %+v", flows)
	}
	for _, f := range flows {
		if f.Packets != 9 || f.Bytes != 756 || f.Used != "0.001s" || f.Actions != "output" || f.EthSrc != "" || f.EthType != "0x0800" {
			t.Errorf("flow %+v", f)
		}
	}
}
