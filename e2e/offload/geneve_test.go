package offload

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Geneve shapes (issue 23, ML2/OVN): the tc rules of the pair on the
// representor (tunnel_key set ... dst_port 6081 geneve_opts, mirred to
// genev_sys_6081) and on genev_sys_6081 (enc_* keys, enc_dst_port 6081,
// geneve_opts), the datapath flows (tunnel(..geneve({class=0x102,..})..),
// set(tunnel(..geneve(..)..)), tnl_push(..geneve(..)..)), judged both ways,
// and a run whose network type is known refusing the other tunnel's
// pipelines as proof. Inputs: testdata/pipeline/*geneve*, testdata/hw and
// testdata/ovs (README.md names each file's source).

const geneveDev = "genev_sys_6081"

// geneveObs is the representor's and genev_sys_6081's observation.
func geneveObs(t *testing.T, rep, decap string) []TCObservation {
	t.Helper()
	return []TCObservation{
		{Device: "enp8s0f0_1", Samples: pipeTCSamples(t, rep), Window: 4 * time.Second},
		{Device: geneveDev, Samples: pipeTCSamples(t, decap), Window: 4 * time.Second},
	}
}

// Flower's Geneve option match and tunnel_key's Geneve metadata read the
// same from either form of the listing: the JSON option arrays
// (geneve_opt_key / geneve_opt_mask, {class,type,data}) become the text
// form's "geneve_opts CLASS:TYPE:DATA/MASK".
func TestTCGeneveKeysTextAndJSONAgree(t *testing.T) {
	for _, name := range []string{"tc-geneve-decap-1.txt", "tc-geneve-decap-1.json"} {
		d := pipeTC(t, name)
		if len(d.Filters) != 1 {
			t.Fatalf("%s: %d filters, want 1", name, len(d.Filters))
		}
		f := d.Filters[0]
		for k, want := range map[string]string{"geneve_opts": "0102:80:00020001/ffff:ff:7fffffff", "enc_dst_port": "6081", "enc_key_id": "5", "enc_src_ip": "198.18.1.12"} {
			if f.Keys[k] != want {
				t.Errorf("%s: key %s = %q, want %q (keys %v)", name, k, f.Keys[k], want, f.Keys)
			}
		}
		if _, raw := f.Keys["geneve_opt_key"]; raw {
			t.Errorf("%s: the JSON option array is kept beside geneve_opts: %v", name, f.Keys)
		}
		if tk := f.Actions[0].Tunnel; tk == nil || tk.Mode != "unset" {
			t.Errorf("%s: action 1 tunnel_key: %+v, want mode unset", name, tk)
		}
		if typ, why := tunnelShape(f.tunnelHints(geneveDev)); typ != TunnelGeneve || !strings.Contains(why, "geneve_opts") || !strings.Contains(why, "enc_dst_port 6081") {
			t.Errorf("%s: tunnel shape %q (%s), want geneve from geneve_opts and enc_dst_port 6081", name, typ, why)
		}
	}
	for _, name := range []string{"tc-geneve-encap-1.txt", "tc-geneve-encap-1.json"} {
		f := pipeTC(t, name).Filters[0]
		want := TCTunnelKey{Mode: "set", SrcIP: "198.18.1.11", DstIP: "198.18.1.12", KeyID: "5", DstPort: 6081, GeneveOpts: "0102:80:00010002"}
		if tk := f.Actions[0].Tunnel; tk == nil || *tk != want {
			t.Errorf("%s: tunnel_key %+v, want %+v", name, tk, want)
		}
		if f.Actions[1].ToDev != geneveDev {
			t.Errorf("%s: mirred to %q", name, f.Actions[1].ToDev)
		}
		if typ, _ := tunnelShape(f.tunnelHints("enp8s0f0_1")); typ != TunnelGeneve {
			t.Errorf("%s: tunnel shape %q, want geneve", name, typ)
		}
	}
}

// The recorded `tc actions get` listing of a Geneve tunnel_key (netdev,
// 2020, iproute2 printing "geneve_opt"), under a filter line so that the
// filter parser reads it: the option is kept under either spelling.
func TestTCTunnelKeyRecordedGeneveOpt(t *testing.T) {
	rec := string(readTestdata(t, "hw/tc-actions-tunnel-key-geneve-netdev2020.txt"))
	_, block, ok := strings.Cut(rec, "total acts 0\n")
	if !ok {
		t.Fatal("recording lacks its header line")
	}
	d, err := ParseTCText([]byte("filter protocol ip pref 1 flower chain 0 handle 0x1\n  in_hw in_hw_count 1\n" + block))
	if err != nil {
		t.Fatal(err)
	}
	want := TCTunnelKey{Mode: "set", SrcIP: "1.1.1.1", DstIP: "2.2.2.2", KeyID: "42", DstPort: 6081, GeneveOpts: "0102:80:00880022"}
	if tk := d.Filters[0].Actions[0].Tunnel; tk == nil || *tk != want {
		t.Fatalf("tunnel_key %+v, want %+v", tk, want)
	}
	bad := strings.Replace(block, "dst_port 6081", "dst_port 6O81", 1)
	if _, err := ParseTCText([]byte("filter protocol ip pref 1 flower chain 0 handle 0x1\n" + bad)); err == nil || !strings.Contains(err.Error(), `dst_port "6O81"`) {
		t.Errorf("a bad dst_port: err %v, want one naming it", err)
	}
}

// Geneve, tc, both ways. Encap on the representor and decap on
// genev_sys_6081, in hardware and growing: offloaded, each direction on
// its device, with or without the run's network type geneve. The decap
// rule not_in_hw and counting: that device is software, and the pair is
// "mixed" across devices; on its own, software.
func TestTCGeneveJudgedBothWays(t *testing.T) {
	for _, network := range []string{"", results.NetworkGeneve} {
		v, why, basis := JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap"), pipePair, network)
		expectVerdict(t, "geneve offloaded, network "+network, v, why, results.VerdictOffloaded,
			"enp8s0f0_1: direction "+pipeMACA+" -> "+pipeMACB+": offloaded", "tunnel_key set key_id 5 dst_port 6081 geneve_opts 0102:80:00010002", "mirred to genev_sys_6081",
			geneveDev+": direction "+pipeMACB+" -> "+pipeMACA+": offloaded", "enc_dst_port 6081", "geneve_opts 0102:80:00020001/ffff:ff:7fffffff", "hardware packets +6028543")
		if len(basis) != 2 || !strings.HasPrefix(basis[1], geneveDev+": direction "+pipeMACB+" -> "+pipeMACA+": offloaded") {
			t.Errorf("basis %q", basis)
		}
	}
	v, why, _ := JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap-sw"), pipePair, results.NetworkGeneve)
	expectVerdict(t, "geneve decap in software", v, why, results.VerdictInconclusive,
		"some devices offload the guests' flows and others do not", geneveDev+": direction "+pipeMACB+" -> "+pipeMACA+": software", "not_in_hw", "software packets +6028543")
	v, why, _ = JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap-sw")[1:], pipePair, results.NetworkGeneve)
	expectVerdict(t, "geneve decap alone in software", v, why, results.VerdictSoftware, "in software, counting packets")
}

// What would say "offloaded" wrongly: a run on one tunnel type taking the
// other's pipelines as proof. Geneve rules in hardware on a VXLAN run, and
// VXLAN rules (hw/tc-mlx5-*: vxlan_sys_4789, dst_port 4789) on a Geneve
// run, are inconclusive, naming the words that gave the tunnel away; the
// same rules on their own network read offloaded. Before issue 23 the
// judge had no network type: it said offloaded to both.
func TestTCTunnelTypeMustMatchTheRun(t *testing.T) {
	v, why, _ := JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap"), pipePair, results.NetworkVXLAN)
	expectVerdict(t, "geneve rules on a vxlan run", v, why, results.VerdictInconclusive,
		"crossed Geneve (", "mirred to genev_sys_6081", "decap on genev_sys_6081", "the run's network type is vxlan")
	vx := []TCObservation{
		{Device: "enp8s0f0_1", Samples: []TCDump{mustTC(t, "hw/tc-mlx5-vf-rep-encap.txt"), mustTC(t, "hw/tc-mlx5-vf-rep-encap-sample2.txt")}, Window: 4 * time.Second},
		{Device: "vxlan_sys_4789", Samples: []TCDump{mustTC(t, "hw/tc-mlx5-vxlan-decap.txt"), mustTC(t, "hw/tc-mlx5-vxlan-decap-sample2.txt")}, Window: 4 * time.Second},
	}
	mlx := []string{mlxMACLocal, mlxMACRemote}
	v, why, _ = JudgeTCNetwork(vx, mlx, results.NetworkVXLAN)
	expectVerdict(t, "vxlan rules on a vxlan run", v, why, results.VerdictOffloaded)
	v, why, _ = JudgeTCNetwork(vx, mlx, results.NetworkGeneve)
	expectVerdict(t, "vxlan rules on a geneve run", v, why, results.VerdictInconclusive,
		"crossed VXLAN (", "tunnel_key set dst_port 4789", "enc_dst_port 4789", "the run's network type is geneve")
	v, why, _ = JudgeTCNetwork(vx, mlx, "vlan")
	expectVerdict(t, "vxlan rules on a vlan run", v, why, results.VerdictInconclusive, "the run's network type is vlan")
}

// An idle rule of the pair over another tunnel (a VXLAN-shaped decap
// rule, enc_dst_port 4789, on genev_sys_6081: its words conflict) beside
// the Geneve pipeline that carried the flow: named, not judged, and the
// Geneve pipeline reads offloaded. Counting packets, it spoils the
// direction.
func TestTCIdleOtherTunnelRuleIsListed(t *testing.T) {
	idleVXLAN := `filter protocol ip pref 3 flower chain 0 handle 0x2
  dst_mac fa:16:3e:4a:11:01
  src_mac fa:16:3e:4a:11:02
  eth_type ipv4
  enc_dst_ip 198.18.1.11
  enc_src_ip 198.18.1.12
  enc_key_id 98
  enc_dst_port 4789
  in_hw in_hw_count 1
        action order 1: tunnel_key  unset pipe
         index 7 ref 1 bind 1 installed 900 sec used 800 sec
        Action statistics:
        Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
        backlog 0b 0p requeues 0

        action order 2: mirred (Egress Redirect to device enp8s0f0_1) stolen
        index 8 ref 1 bind 1 installed 900 sec used 800 sec
        Action statistics:
        Sent 4200 bytes 30 pkt (dropped 0, overlimits 0 requeues 0)
        Sent software 0 bytes 0 pkt
        Sent hardware 4200 bytes 30 pkt
        backlog 0b 0p requeues 0
`
	var samples []TCDump
	for _, n := range []string{"1", "2"} {
		d, err := ParseTCText(append(readTestdata(t, "pipeline/tc-geneve-decap-"+n+".txt"), idleVXLAN...))
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, d)
	}
	obs := []TCObservation{{Device: geneveDev, Samples: samples, Window: 4 * time.Second}}
	v, why, _ := JudgeTCNetwork(obs, pipePair, results.NetworkGeneve)
	expectVerdict(t, "idle vxlan rule on a geneve run", v, why, results.VerdictOffloaded, "idle pipelines over another tunnel than the run's geneve, not judged", "enc_dst_port 4789")
	// The same rule counting packets: the pair's traffic crossed VXLAN.
	busy := strings.Replace(idleVXLAN, "4200 bytes 30 pkt", "8400 bytes 60 pkt", 2)
	d, err := ParseTCText(append(readTestdata(t, "pipeline/tc-geneve-decap-2.txt"), busy...))
	if err != nil {
		t.Fatal(err)
	}
	obs[0].Samples[1] = d
	v, why, _ = JudgeTCNetwork(obs, pipePair, results.NetworkGeneve)
	expectVerdict(t, "busy vxlan rule on a geneve run", v, why, results.VerdictInconclusive, "crossed conflicting tunnel types (decap on genev_sys_6081, enc_dst_port 4789)")
}

// A rule whose words name both tunnels (Geneve options sent to the VXLAN
// device) contradicts any tunnelled network.
func TestTunnelShapeConflict(t *testing.T) {
	f := pipeTC(t, "tc-geneve-encap-1.txt").Filters[0]
	f.Actions[1].ToDev = "vxlan_sys_4789"
	typ, why := tunnelShape(f.tunnelHints("enp8s0f0_1"))
	if typ != tunnelConflict || !strings.Contains(why, "mirred to vxlan_sys_4789") || !strings.Contains(why, "geneve_opts") {
		t.Fatalf("shape %q (%s), want conflicting", typ, why)
	}
	for _, n := range []string{results.NetworkVXLAN, results.NetworkGeneve} {
		if !contradicts(n, typ) {
			t.Errorf("a conflicting shape does not contradict %s", n)
		}
	}
	if contradicts("", TunnelGeneve) || contradicts(results.NetworkGeneve, "") || contradicts(results.NetworkGRE, TunnelVXLAN) {
		t.Error("an unknown side contradicts")
	}
}

func genevePipe(t *testing.T, base string, edit func(line string) string) [][]DpctlFlow {
	t.Helper()
	var out [][]DpctlFlow
	for _, n := range []string{"-1.txt", "-2.txt"} {
		lines := strings.Split(string(readTestdata(t, "pipeline/"+base+n)), "\n")
		for i := range lines {
			lines[i] = edit(lines[i])
		}
		f, err := ParseDpctl([]byte(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func keepLine(l string) string { return l }

// decapToOVS moves the flows matched on the Geneve device (recirc_id
// stage) to the software datapath.
func decapToOVS(recirc string) func(string) string {
	return func(l string) string {
		if strings.Contains(l, "in_port(genev_sys_6081)") && strings.Contains(l, "recirc_id("+recirc+")") {
			return strings.Replace(l, "offloaded:yes, dp:tc", "dp:ovs", 1)
		}
		return l
	}
}

// Geneve, dpctl, both ways: encap (set(tunnel(..geneve(..)..)),
// genev_sys_6081) and decap (tunnel(..geneve({class=0x102,..})..),
// in_port(genev_sys_6081)) offloaded; the decap flow in dp:ovs is mixed;
// both in dp:ovs is software; on a VXLAN run, inconclusive.
func TestDpctlGeneveJudgedBothWays(t *testing.T) {
	judge := func(flows [][]DpctlFlow, network string) (results.Verdict, string) {
		v, why, _ := JudgeDpctlBasis(DpctlSamples{Offloaded: flows, Network: network}, pipePair)
		return v, why
	}
	off := genevePipe(t, "dpctl-geneve-offloaded", keepLine)
	if typ, why := tunnelShape(off[0][1].tunnelHints()); typ != TunnelGeneve || !strings.Contains(why, "geneve({class=0x102") || !strings.Contains(why, "in_port(genev_sys_6081)") {
		t.Errorf("decap flow shape %q (%s)", typ, why)
	}
	for _, network := range []string{"", results.NetworkGeneve} {
		v, why := judge(off, network)
		expectVerdict(t, "geneve offloaded, network "+network, v, why, results.VerdictOffloaded,
			"direction "+pipeMACA+" -> "+pipeMACB+": offloaded", "direction "+pipeMACB+" -> "+pipeMACA+": offloaded",
			"in_port(genev_sys_6081) tunnel(tun_id=0x5,tp_dst=6081,geneve(..),..)")
	}
	v, why := judge(off, results.NetworkVXLAN)
	expectVerdict(t, "geneve flows on a vxlan run", v, why, results.VerdictInconclusive, "crossed Geneve (", "set(tunnel(..geneve(", "output to genev_sys_6081", "the run's network type is vxlan")
	v, why = judge(genevePipe(t, "dpctl-geneve-offloaded", decapToOVS("0")), results.NetworkGeneve)
	expectVerdict(t, "geneve decap in software", v, why, results.VerdictInconclusive, "mixed: one direction in hardware, the other not", "direction "+pipeMACB+" -> "+pipeMACA+": software")
	allSW := func(l string) string { return strings.Replace(l, "offloaded:yes, dp:tc", "dp:ovs", 1) }
	v, why = judge(genevePipe(t, "dpctl-geneve-offloaded", allSW), results.NetworkGeneve)
	expectVerdict(t, "geneve in software", v, why, results.VerdictSoftware, "no offloaded IP flows", "2 software flows")
}

// Geneve with conntrack (OVN's ACLs are conntrack-based): each direction
// recirculates through ct(zone=4); the decap side's post-ct flow matches
// tunnel(..geneve({len=4})..) as OVN's do (ovn-org/ovn#173, #207). All
// offloaded and growing: offloaded. The post-ct decap flow in dp:ovs
// behind its offloaded first flow: that direction is software (the NIC
// misses there), the other offloaded: "mixed".
func TestDpctlGeneveConntrackPipeline(t *testing.T) {
	judge := func(flows [][]DpctlFlow) (results.Verdict, string) {
		return JudgeDpctl(DpctlSamples{Offloaded: flows, Network: results.NetworkGeneve}, pipePair)
	}
	v, why := judge(genevePipe(t, "dpctl-geneve-ct", keepLine))
	expectVerdict(t, "geneve ct offloaded", v, why, results.VerdictOffloaded,
		"recirc_id(0) in_port(genev_sys_6081) ct_state(-new-trk) tunnel(tun_id=0x5,tp_dst=6081,geneve(..),..)", "-> recirc_id(0x2) in_port(genev_sys_6081) ct_state(-new+est+trk)")
	v, why = judge(genevePipe(t, "dpctl-geneve-ct", decapToOVS("0x2")))
	expectVerdict(t, "geneve post-ct decap in software", v, why, results.VerdictInconclusive, "mixed: one direction in hardware, the other not",
		"direction "+pipeMACB+" -> "+pipeMACA+": software: stages in software counted packets", "recirc_id(0x2) in_port(genev_sys_6081)", "dp:ovs")
}

// The userspace datapath (the lab's netdev bridges): tnl_push with a
// Geneve header out, tnl_pop(genev_sys_6081) then the inner flow matched
// on tunnel(..geneve(..)..) in; everything dp:ovs: software, and a VXLAN
// run refuses it all the same (the Geneve words are in tnl_push's header).
func TestDpctlGeneveUserspaceDatapath(t *testing.T) {
	flows := genevePipe(t, "dpctl-geneve-userspace", keepLine)
	push := flows[1][0]
	if !push.outputs() {
		t.Error("the tnl_push flow does not output")
	}
	if typ, why := tunnelShape(push.tunnelHints()); typ != TunnelGeneve || !strings.Contains(why, "tnl_push(..geneve(..)..)") || !strings.Contains(why, "tnl_push(..udp(dst=6081)..)") {
		t.Errorf("tnl_push shape %q (%s)", typ, why)
	}
	v, why := JudgeDpctl(DpctlSamples{Offloaded: flows, Network: results.NetworkGeneve}, pipePair)
	expectVerdict(t, "geneve userspace", v, why, results.VerdictSoftware, "no offloaded IP flows", "tnl_push(tnl_port(genev_sys_6081)")
	v, why = JudgeDpctl(DpctlSamples{Offloaded: flows, Network: results.NetworkVXLAN}, pipePair)
	expectVerdict(t, "geneve userspace on a vxlan run", v, why, results.VerdictInconclusive, "crossed Geneve (")
}

// Real Geneve flows from OVN (ovn-org/ovn#173, #160) and OVS's own test
// suite (tests/tunnel-push-pop.at): every shape parses, the nested braces
// of two option TLVs included, and each names Geneve.
func TestDpctlRecordedGeneveShapes(t *testing.T) {
	ct := mustDpctl(t, "hw/dpctl-ovn173-geneve-ct-offloaded.txt")
	if len(ct) != 4 {
		t.Fatalf("ovn#173: %d flows, want 4", len(ct))
	}
	for i, want := range []string{"tunnel(..geneve({class=0x102,type=0x80,len=4,0x10002/0x7fffffff})..)", "tunnel(..geneve({len=4})..)"} {
		if typ, why := tunnelShape(ct[i].tunnelHints()); typ != TunnelGeneve || !strings.Contains(why, want) || !strings.Contains(why, "tp_dst=6081") {
			t.Errorf("ovn#173 flow %d: shape %q (%s), want geneve from %s", i+1, typ, why, want)
		}
	}
	// Routed (the first flow rewrites the MACs before ct, the post-ct
	// flow matches the rewritten ones): no pipeline of the two hosts'
	// MACs reaches an output, so nothing is proven, whatever the network.
	pair := []string{"00:17:21:62:55:10", "00:17:21:62:55:20"}
	for _, network := range []string{results.NetworkGeneve, results.NetworkVXLAN} {
		v, why := JudgeDpctl(DpctlSamples{Offloaded: [][]DpctlFlow{ct}, OffloadedIsTyped: true, Window: time.Second, Network: network}, pair)
		expectVerdict(t, "ovn#173 on "+network, v, why, results.VerdictInconclusive)
		if network == results.NetworkVXLAN && !strings.Contains(why, "crossed Geneve") {
			t.Errorf("ovn#173 on vxlan: %s", why)
		}
	}
	for _, f := range mustDpctl(t, "hw/dpctl-ovn160-geneve-offloaded.txt") {
		if typ, _ := tunnelShape(f.tunnelHints()); typ != TunnelGeneve || f.InPort != "2" {
			t.Errorf("ovn#160: shape %q, in_port %q", typ, f.InPort)
		}
	}
	pp := mustDpctl(t, "ovs/dpctl-tunnel-push-pop-geneve.txt")
	if len(pp) != 2 || !strings.Contains(pp[0].Tunnel, "geneve({class=0xffff,type=0x80,len=4,0xa/0xf}{class=0xffff,type=0,len=4})") {
		t.Fatalf("tunnel-push-pop.at: %+v", pp)
	}
	if typ, _ := tunnelShape(pp[0].tunnelHints()); typ != TunnelGeneve {
		t.Errorf("tunnel-push-pop.at decap: shape %q", typ)
	}
	if typ, why := tunnelShape(pp[1].tunnelHints()); typ != TunnelGeneve || !pp[1].outputs() {
		t.Errorf("tunnel-push-pop.at tnl_push: shape %q (%s), outputs %v", typ, why, pp[1].outputs())
	}
	// A stray brace is an error, as a stray parenthesis is.
	if _, err := ParseDpctl([]byte(strings.Replace(string(readTestdata(t, "ovs/dpctl-tunnel-push-pop-geneve.txt")), "len=4})", "len=4)", 1))); err == nil {
		t.Error("unbalanced braces parsed")
	}
}

// Geneve decap through conntrack on genev_sys_6081: chain 0 (enc_* keys,
// geneve_opts, ct_state -trk, ct zone 4, goto chain 2), chain 2 (the
// tunnel keys again, ct_state +trk+est, tunnel_key unset, mirred to the
// representor). Both in hardware and growing: offloaded. Chain 2
// not_in_hw and counting: the NIC misses after conntrack, software.
func TestTCGeneveConntrackDecap(t *testing.T) {
	judge := func(base string) (results.Verdict, string) {
		v, why, _ := JudgeTCNetwork([]TCObservation{{Device: geneveDev, Samples: pipeTCSamples(t, base), Window: 4 * time.Second}}, pipePair, results.NetworkGeneve)
		return v, why
	}
	v, why := judge("tc-geneve-ct-decap")
	expectVerdict(t, "geneve ct decap in hardware", v, why, results.VerdictOffloaded,
		"direction "+pipeMACB+" -> "+pipeMACA, "chain 0 flower pref 2", "goto chain 2", "-> chain 2 flower pref 3", "ct_state +trk+est", "mirred to enp8s0f0_1", "hardware packets +6040879")
	v, why = judge("tc-geneve-ct-decap-miss")
	expectVerdict(t, "geneve ct decap missing in chain 2", v, why, results.VerdictSoftware,
		"stages in software counted packets", "chain 2 flower", "not_in_hw", "software packets +6040879")
	v, why, _ = JudgeTCNetwork([]TCObservation{{Device: geneveDev, Samples: pipeTCSamples(t, "tc-geneve-ct-decap"), Window: 4 * time.Second}}, pipePair, results.NetworkVXLAN)
	expectVerdict(t, "geneve ct decap on a vxlan run", v, why, results.VerdictInconclusive, "crossed Geneve (")
}
