package offload

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Samples: testdata/hw/tc-mlx5-*.txt are from the mlx5 VF-tunnel series
// ([mlx5-vf-tunnel] in testdata/README.md); *-sample2 derive from them with
// only the counters advanced. testdata/hw/*.json: [wago-json] is a public tc
// JSON listing; tc-mlx5-vxlan-decap*.json transcribe the mlx5 text sample into
// iproute2's JSON layout ([iproute2-json]). testdata/sw/* were recorded here by
// testdata/record-software-path.sh (commands in testdata/README.md).

func TestParseTCTextMlx5Decap(t *testing.T) {
	d, err := ParseTCText(readTestdata(t, "hw/tc-mlx5-vxlan-decap.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Filters) != 1 {
		t.Fatalf("filters: got %d, want 1 (the handle-less head line is not a filter): %+v", len(d.Filters), d.Filters)
	}
	f := d.Filters[0]
	if f.Kind != "flower" || f.Pref != 4 || f.Handle != "0x1" || f.Protocol != "ip" || f.Chain != 0 {
		t.Errorf("filter header: %+v", f)
	}
	if !f.InHW || f.NotInHW || f.InHWCount != 1 || f.SkipSW {
		t.Errorf("flags: in_hw=%v not_in_hw=%v in_hw_count=%d skip_sw=%v", f.InHW, f.NotInHW, f.InHWCount, f.SkipSW)
	}
	for k, want := range map[string]string{"dst_mac": mlxMACLocal, "src_mac": mlxMACRemote, "enc_key_id": "98", "enc_dst_ip": "7.7.7.5", "enc_dst_port": "4789", "eth_type": "ipv4"} {
		if f.Keys[k] != want {
			t.Errorf("key %s: got %q, want %q", k, f.Keys[k], want)
		}
	}
	if len(f.Actions) != 2 {
		t.Fatalf("actions: got %d, want 2", len(f.Actions))
	}
	a := f.Actions[1]
	if a.Kind != "mirred" || a.ToDev != "enp8s0f0_1" || a.Packets != 1082 || a.Bytes != 129936 || a.HWPackets != 1082 || a.HWBytes != 129936 || a.SWPackets != 0 {
		t.Errorf("mirred action: %+v", a)
	}
	if f.Actions[0].Kind != "tunnel_key" || f.Actions[0].HWPackets != 0 || !f.Actions[0].HasStats {
		t.Errorf("tunnel_key action: %+v", f.Actions[0])
	}
	if f.HWPackets() != 1082 || f.SWPackets() != 0 {
		t.Errorf("filter counters: hw %d sw %d", f.HWPackets(), f.SWPackets())
	}
}

func TestParseTCTextOtherShapes(t *testing.T) {
	// encap rule on the VF representor: tunnel_key set with multi-line options
	d, err := ParseTCText(readTestdata(t, "hw/tc-mlx5-vf-rep-encap.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Filters) != 1 || d.Filters[0].HWPackets() != 4028 || d.Filters[0].Actions[1].ToDev != "vxlan_sys_4789" {
		t.Errorf("encap rule: %+v", d.Filters)
	}
	// [bnxt-ct-helper]: block, skip_sw, no statistics (no -s)
	d, err = ParseTCText(readTestdata(t, "hw/tc-bnxt-ct-helper.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Filters) != 1 || !d.Filters[0].SkipSW || !d.Filters[0].InHW || d.Filters[0].Pref != 49152 || d.Filters[0].Actions[0].HasStats {
		t.Errorf("bnxt rule: %+v", d.Filters)
	}
	// [calico-adq]: flower not_in_hw and a bpf filter with flags on the header line
	d, err = ParseTCText(readTestdata(t, "hw/tc-calico-adq-egress.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Filters) != 2 {
		t.Fatalf("calico: got %d filters, want 2", len(d.Filters))
	}
	if f := d.Filters[0]; f.Kind != "flower" || !f.NotInHW || f.InHW || f.Keys["src_port"] != "6379" {
		t.Errorf("calico flower: %+v", f)
	}
	if f := d.Filters[1]; f.Kind != "bpf" || !f.NotInHW || f.Handle != "0x1" {
		t.Errorf("calico bpf: %+v", f)
	}
}

func TestParseTCJSON(t *testing.T) {
	d, err := ParseTC(readTestdata(t, "hw/tc-mlx5-vxlan-decap.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != "json" || len(d.Filters) != 1 {
		t.Fatalf("got %+v", d)
	}
	f := d.Filters[0]
	if f.Handle != "1" || f.Keys["enc_key_id"] != "98" || f.Keys["src_mac"] != mlxMACRemote || !f.InHW || f.InHWCount != 1 {
		t.Errorf("filter: %+v", f)
	}
	if f.HWPackets() != 1082 || f.Actions[1].ToDev != "enp8s0f0_1" || f.Actions[1].HWBytes != 129936 {
		t.Errorf("actions: %+v", f.Actions)
	}
	// text and JSON of the same rule agree on identity across samples
	txt, _ := ParseTCText(readTestdata(t, "hw/tc-mlx5-vxlan-decap.txt"))
	if txt.Filters[0].id() != f.id() {
		t.Errorf("ids differ: text %q json %q", txt.Filters[0].id(), f.id())
	}

	w, err := ParseTCJSON(readTestdata(t, "hw/tc-wago-flower-in-hw.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Filters) != 3 {
		t.Fatalf("wago: got %d filters, want 3", len(w.Filters))
	}
	if f := w.Filters[1]; f.Kind != "matchall" || !f.NotInHW || f.InHWCount != -1 || f.Actions[0].ToDev != "ethX1" {
		t.Errorf("wago matchall: %+v", f)
	}
	if f := w.Filters[2]; !f.SkipSW || !f.InHW || f.Keys["dst_mac"] != "ff:ff:ff:ff:ff:ff" || f.Actions[0].HasStats {
		t.Errorf("wago flower: %+v", f)
	}
}

func TestParseTCRecordedEmpty(t *testing.T) {
	for _, name := range []string{"sw/tc-noqdisc.json", "sw/tc-noqdisc.txt"} {
		d, err := ParseTC(readTestdata(t, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(d.Filters) != 0 {
			t.Errorf("%s: got %d filters, want 0", name, len(d.Filters))
		}
	}
}

func TestParseTCErrors(t *testing.T) {
	cases := map[string]string{
		"tc error message (recorded stderr)": string(readTestdata(t, "sw/tc-nodev.txt.stderr")),
		"truncated JSON":                     `[{"protocol":"ip","pref":4,"kind":"flower","chain":0,"options":{"handle":1`,
		"JSON with trailing data":            `[] []`,
		"JSON handle of wrong type":          `[{"pref":1,"kind":"flower","options":{"handle":[1]}}]`,
		"JSON counter of wrong type":         `[{"pref":1,"kind":"flower","options":{"handle":1,"actions":[{"stats":{"hw_packets":"many"}}]}}]`,
		"text pref not a number":             "filter protocol ip pref x flower chain 0 handle 0x1\n",
		"text without kind":                  "filter protocol ip pref 4\n",
		"text bad Sent line":                 "filter protocol ip pref 4 flower chain 0 handle 0x1\n  in_hw\n action order 1: gact drop\n Sent many bytes 3 pkt\n",
		"text bad action order":              "filter protocol ip pref 4 flower chain 0 handle 0x1\n action order x: gact drop\n",
	}
	for name, in := range cases {
		if _, err := ParseTC([]byte(in)); err == nil {
			t.Errorf("%s: no error for %q", name, in)
		}
	}
}

func mustTC(t *testing.T, name string) TCDump {
	t.Helper()
	d, err := ParseTC(readTestdata(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// notInHW derives a software-path variant of the mlx5 decap rule: tc's flags
// line says not_in_hw and no hardware counters are printed.
func notInHW(t *testing.T) TCDump {
	t.Helper()
	s := string(readTestdata(t, "hw/tc-mlx5-vxlan-decap.txt"))
	s = strings.Replace(s, "in_hw in_hw_count 1", "not_in_hw", 1)
	s = strings.ReplaceAll(s, "        Sent hardware 129936 bytes 1082 pkt\n", "")
	s = strings.ReplaceAll(s, "        Sent software 0 bytes 0 pkt\n", "")
	d, err := ParseTCText([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestJudgeTC(t *testing.T) {
	no := false
	macs := []string{mlxMACLocal, mlxMACRemote}
	dec1, dec2 := mustTC(t, "hw/tc-mlx5-vxlan-decap.txt"), mustTC(t, "hw/tc-mlx5-vxlan-decap-sample2.txt")
	j1, j2 := mustTC(t, "hw/tc-mlx5-vxlan-decap.json"), mustTC(t, "hw/tc-mlx5-vxlan-decap-sample2.json")
	enc, enc2 := mustTC(t, "hw/tc-mlx5-vf-rep-encap.txt"), mustTC(t, "hw/tc-mlx5-vf-rep-encap-sample2.txt")
	sw := notInHW(t)
	empty := mustTC(t, "sw/tc-noqdisc.json")
	cases := []struct {
		name   string
		obs    []TCObservation
		macs   []string
		want   results.Verdict
		reason string
	}{
		{"hardware counters grow (text)", []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{dec1, dec2}}}, macs, results.VerdictOffloaded, "hardware packets +21665"},
		{"hardware counters grow (JSON)", []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{j1, j2}}}, macs, results.VerdictOffloaded, "+21665"},
		// One sample proves nothing without a window for the last-use time
		// (verdict_tc_test.go covers the window).
		{"one sample, non-zero hardware counters", []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{dec1}}}, macs, results.VerdictInconclusive, "one sample proves nothing"},
		{"in hardware but counters static", []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{dec1, dec1}}}, macs, results.VerdictInconclusive, "did not grow"},
		{"rep encap and vxlan decap both offloaded", []TCObservation{{Device: "enp8s0f0_1", Samples: []TCDump{enc, enc2}}, {Device: "vxlan_sys_4789", Samples: []TCDump{dec1, dec2}}}, macs, results.VerdictOffloaded, "enp8s0f0_1: direction ca:2e:a7:3f:f5:0f -> 0a:40:bd:30:89:99: offloaded"},
		{"vxlan without rules is neutral next to an offloaded rep", []TCObservation{{Device: "enp8s0f0_1", Samples: []TCDump{enc, enc2}}, {Device: "vxlan_sys_4789", Samples: []TCDump{empty, empty}}}, macs, results.VerdictOffloaded, "vxlan_sys_4789: no rule of the guest pair; no filter on the device"},
		{"rules for other MACs only", []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{dec1, dec2}}}, []string{recMAC1, recMAC2}, results.VerdictSoftware, "no rule of the guest pair; 1 unrelated rule (1 flower)"},
		{"not_in_hw rules", []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{sw, sw}}}, macs, results.VerdictSoftware, "none in hardware"},
		{"recorded: no ingress qdisc", []TCObservation{{Device: "offrec-rep1", Samples: []TCDump{empty, empty}, IngressQdisc: &no}}, []string{recMAC1, recMAC2}, results.VerdictSoftware, "no ingress qdisc"},
		{"mixed devices", []TCObservation{{Device: "rep", Samples: []TCDump{sw}}, {Device: "vxlan_sys_4789", Samples: []TCDump{dec1, dec2}}}, macs, results.VerdictInconclusive, "some devices offload"},
		{"tool problem", []TCObservation{{Device: "rep", Problem: "tc is not installed"}, {Device: "vxlan_sys_4789", Samples: []TCDump{dec1, dec2}}}, macs, results.VerdictInconclusive, "tc is not installed"},
		// vxlan_device auto: OVS tunnels on 4790 but no vxlan_sys_4790 on the
		// host (CheckTC adds it as a problem): the decap direction is unseen,
		// so an offloaded representor alone must not make the pair offloaded.
		{"decap device missing next to an offloaded rep", []TCObservation{{Device: "enp8s0f0_1", Samples: []TCDump{enc, enc2}}, {Device: "vxlan_sys_4790", Problem: "OVS tunnels use UDP port 4790 but vxlan_sys_4790 is not on the host"}}, macs, results.VerdictInconclusive, "vxlan_sys_4790 is not on the host"},
		{"no observation", nil, macs, results.VerdictInconclusive, "no device"},
		{"bad MAC", []TCObservation{{Device: "rep", Samples: []TCDump{dec1}}}, []string{"zz"}, results.VerdictInconclusive, "bad guest MAC"},
	}
	for _, c := range cases {
		v, why := JudgeTC(c.obs, c.macs)
		if v != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("%s: got %s %q, want %s containing %q", c.name, v, why, c.want, c.reason)
		}
	}
}

func TestJudgeTCSoftwareGrowthBeatsHardware(t *testing.T) {
	// Derived from the mlx5 decap sample: in_hw, but between the samples the
	// software counter grew more than the hardware one.
	s := string(readTestdata(t, "hw/tc-mlx5-vxlan-decap-sample2.txt"))
	s = strings.Replace(s, "Sent hardware 2729656 bytes 22747 pkt", "Sent hardware 130056 bytes 1083 pkt", 1)
	s = strings.Replace(s, "Sent software 0 bytes 0 pkt", "Sent software 2599600 bytes 21664 pkt", 1)
	d2, err := ParseTCText([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	v, why := JudgeTC([]TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{mustTC(t, "hw/tc-mlx5-vxlan-decap.txt"), d2}}}, []string{mlxMACLocal, mlxMACRemote})
	if v != results.VerdictInconclusive || !strings.Contains(why, "software packets grew more") {
		t.Errorf("got %s %q", v, why)
	}
}
