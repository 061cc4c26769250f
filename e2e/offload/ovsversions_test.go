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

// OVS 3.5.0 from Debian 13, the lab's LAB_RELEASE=epoxy (Neutron 26's OVS
// agent, userspace datapath), as the harness saved it during the TCP
// evidence flow of run 20261203t141149-e1cd on compute1: two full `-m`
// dumps a few seconds apart and the empty `type=offloaded` dumps. The
// printer is the one of 2.17 and 3.3; the guests' flows are dp:ovs and grow,
// so the verdict is software, and the same dumps with the pair's flows
// claimed by tc in software (dp:tc, no offloaded:yes) stay software.
func TestDpctlOVS35SoftwarePath(t *testing.T) {
	all1, all2 := mustDpctl(t, "sw/ovs3.5/dpctl-all-sample1.txt"), mustDpctl(t, "sw/ovs3.5/dpctl-all-sample2.txt")
	off1, off2 := mustDpctl(t, "sw/ovs3.5/dpctl-offloaded-sample1.txt"), mustDpctl(t, "sw/ovs3.5/dpctl-offloaded-sample2.txt")
	if len(all1) != 10 || len(all2) != 10 || len(off1) != 0 || len(off2) != 0 {
		t.Fatalf("flows: all %d/%d, offloaded %d/%d; want 10 in each full dump (besides the file's header line), none offloaded", len(all1), len(all2), len(off1), len(off2))
	}
	const a, b = "fa:16:3e:30:b2:1a", "fa:16:3e:37:c7:ee"
	var tunnelled int
	for _, f := range all1 {
		if f.DP != "ovs" {
			t.Errorf("flow %s: dp %q, want ovs on the userspace datapath", f.UFID, f.DP)
		}
		if f.InPort == "vxlan_sys_4790" {
			tunnelled++
		}
	}
	if tunnelled == 0 {
		t.Error("no flow from the VXLAN port vxlan_sys_4790 (decapsulated tunnel traffic)")
	}
	s := DpctlSamples{Offloaded: [][]DpctlFlow{off1, off2}, All: [][]DpctlFlow{all1, all2}, OffloadedIsTyped: true}
	runDpctlCases(t, []dpctlCase{
		// The right reason: both directions' pipelines (the decap one from
		// vxlan_sys_4790 included) counted packets in dp:ovs.
		{"OVS 3.5, software path", s, []string{a, b}, results.VerdictSoftware, []string{"2 software flows", "dp:ovs",
			"direction " + a + " -> " + b + ": software: in software, counting packets", "in_port(vxlan_sys_4790) tunnel(tun_id=0x588,tp_dst=4790/0,..)",
			"direction " + b + " -> " + a + ": software: in software, counting packets", "actions:tnl_push("}},
	})
	// The lab's own recording (VXLAN on 4790, userspace datapath) on its
	// own network type reads the same; on a Geneve run its pipelines
	// (tnl_push(..vxlan(..)..), in_port(vxlan_sys_4790)) are no proof.
	onVXLAN, onGeneve := s, s
	onVXLAN.Network, onGeneve.Network = results.NetworkVXLAN, results.NetworkGeneve
	runDpctlCases(t, []dpctlCase{
		{"OVS 3.5, software path, network vxlan", onVXLAN, []string{a, b}, results.VerdictSoftware, []string{"2 software flows"}},
		{"OVS 3.5, software path, network geneve", onGeneve, []string{a, b}, results.VerdictInconclusive, []string{"crossed VXLAN (", "in_port(vxlan_sys_4790)", "tnl_push(..vxlan(..)..)", "the run's network type is geneve"}},
	})
	tcSW := func(name string) []DpctlFlow {
		return mustDpctlString(t, strings.ReplaceAll(string(readTestdata(t, name)), "dp:ovs", "dp:tc"))
	}
	runDpctlCases(t, []dpctlCase{
		{"OVS 3.5, the pair in TC software", DpctlSamples{Offloaded: [][]DpctlFlow{tcSW("sw/ovs3.5/dpctl-all-sample1.txt"), tcSW("sw/ovs3.5/dpctl-all-sample2.txt")}},
			[]string{a, b}, results.VerdictSoftware, nil},
	})
}
