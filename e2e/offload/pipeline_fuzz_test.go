package offload

import (
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Pipeline invariants (issues 19 and 23), on any dump the parsers accept: the
// second sample is the first with the stages that output changed, so the
// judge must follow every pipeline to its last stage to hold them.
//
//   - a pipeline whose output stage is not in hardware (and counted packets)
//     is never offloaded;
//   - a pipeline whose output stage did not grow, while every other stage
//     grew in hardware, is never offloaded.

// tcOutputsChanged copies d; every filter that outputs is passed to change.
func tcOutputsChanged(d TCDump, change func(*TCFilter), others func(*TCFilter)) TCDump {
	out := TCDump{Format: d.Format, Filters: make([]TCFilter, len(d.Filters))}
	for i, f := range d.Filters {
		f.Actions = append([]TCAction(nil), f.Actions...)
		if f.outputs() {
			change(&f)
		} else {
			others(&f)
		}
		out.Filters[i] = f
	}
	return out
}

func tcPipelineInvariants(t *testing.T, d TCDump) {
	t.Helper()
	keep := func(*TCFilter) {}
	toSoftware := func(f *TCFilter) {
		f.InHW, f.NotInHW, f.InHWCount = false, true, 0
		for i := range f.Actions {
			f.Actions[i].Packets++
			f.Actions[i].SWPackets++
			f.Actions[i].HWPackets = 0
		}
	}
	growHW := func(f *TCFilter) {
		for i := range f.Actions {
			f.Actions[i].Packets += 1000
			f.Actions[i].HWPackets += 1000
		}
	}
	for _, macs := range [][]string{nil, {mlxMACLocal, mlxMACRemote}, pipePair} {
		sw := tcOutputsChanged(d, toSoftware, growHW)
		if v, why := JudgeTC([]TCObservation{{Device: "d", Samples: []TCDump{d, sw}, Window: time.Hour}}, macs); v == results.VerdictOffloaded {
			t.Fatalf("output stages not in hardware judged offloaded (MACs %v): %s", macs, why)
		}
		flat := tcOutputsChanged(d, keep, growHW)
		if v, why := JudgeTC([]TCObservation{{Device: "d", Samples: []TCDump{d, flat}, Window: time.Hour}}, macs); v == results.VerdictOffloaded {
			t.Fatalf("output stages that did not grow judged offloaded (MACs %v): %s", macs, why)
		}
		// Every rule made Geneve-shaped (a geneve_opts key), every rule
		// grown in hardware: on a VXLAN run nothing of it is proof.
		geneve := func(f *TCFilter) {
			growHW(f)
			keys := map[string]string{"geneve_opts": "0102:80:00010002/ffff:ff:7fffffff"}
			for k, v := range f.Keys {
				keys[k] = v
			}
			f.Keys = keys
		}
		before := tcOutputsChanged(d, func(f *TCFilter) { geneve(f); growHW(f) }, geneve)
		grown := tcOutputsChanged(before, growHW, growHW)
		for _, dev := range []string{"d", "vxlan_sys_4789", "genev_sys_6081"} {
			if v, why, _ := JudgeTCNetwork([]TCObservation{{Device: dev, Samples: []TCDump{before, grown}, Window: time.Hour}}, macs, results.NetworkVXLAN); v == results.VerdictOffloaded {
				t.Fatalf("Geneve-shaped rules judged offloaded on a VXLAN run (MACs %v, device %s): %s", macs, dev, why)
			}
		}
	}
}

func FuzzPipelineTC(f *testing.F) {
	seed(f, "pipeline/tc-*.txt", "hw/tc-*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTC(data)
		if err != nil {
			return
		}
		tcPipelineInvariants(t, d)
	})
}

// dpctlOutputsChanged copies flows; every flow that outputs is passed to
// change, every other one to others.
func dpctlOutputsChanged(flows []DpctlFlow, change, others func(*DpctlFlow)) []DpctlFlow {
	out := make([]DpctlFlow, len(flows))
	for i, f := range flows {
		if f.outputs() {
			change(&f)
		} else {
			others(&f)
		}
		out[i] = f
	}
	return out
}

func FuzzPipelineDpctl(f *testing.F) {
	seed(f, "pipeline/dpctl-*.txt", "hw/dpctl-*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, err := ParseDpctl(data)
		if err != nil {
			return
		}
		keep := func(*DpctlFlow) {}
		toSoftware := func(f *DpctlFlow) { f.Offloaded, f.DP, f.Packets = "", "ovs", f.Packets+1 }
		grow := func(f *DpctlFlow) { f.Packets += 1000 }
		for _, macs := range [][]string{nil, {kubeMAC1, kubeMAC2}, pipePair} {
			sw := dpctlOutputsChanged(flows, toSoftware, grow)
			for _, typed := range []bool{false, true} {
				s := DpctlSamples{Offloaded: [][]DpctlFlow{flows, sw}, OffloadedIsTyped: typed, Window: time.Hour}
				if v, why := JudgeDpctl(s, macs); v == results.VerdictOffloaded {
					t.Fatalf("output flows in software judged offloaded (MACs %v, typed %v): %s", macs, typed, why)
				}
			}
			flat := dpctlOutputsChanged(flows, keep, grow)
			if v, why := JudgeDpctl(DpctlSamples{Offloaded: [][]DpctlFlow{flows, flat}, Window: time.Hour}, macs); v == results.VerdictOffloaded {
				t.Fatalf("output flows that did not grow judged offloaded (MACs %v): %s", macs, why)
			}
			// Every flow matched on a Geneve tunnel, every flow grown: on
			// a VXLAN run nothing of it is proof.
			geneve := func(f *DpctlFlow) { f.Tunnel = "tun_id=0x5,tp_dst=6081,geneve({len=4}),flags(+key)" }
			before := dpctlOutputsChanged(flows, geneve, geneve)
			grown := dpctlOutputsChanged(before, grow, grow)
			if v, why := JudgeDpctl(DpctlSamples{Offloaded: [][]DpctlFlow{before, grown}, OffloadedIsTyped: true, Window: time.Hour, Network: results.NetworkVXLAN}, macs); v == results.VerdictOffloaded {
				t.Fatalf("Geneve flows judged offloaded on a VXLAN run (MACs %v): %s", macs, why)
			}
		}
	})
}

// Issue 33's invariant 6: a verdict of offloaded has judged both
// directions. Any dump the parsers accept is grown in hardware (so that
// what it holds of the pair reads offloaded), and one flow or rule more, of
// every shape below, carries traffic of its own: whatever its MACs, its
// tunnel match and where it runs, an offloaded verdict must have judged
// (offloaded, in its basis) every direction of the pair that this growing
// flow's match admits. Which directions a shape admits is worked out here
// from the shape itself, not by the judge's MAC matching.

// ethShape is one eth src or dst match and the pair's addresses it admits.
type ethShape struct {
	match  string            // as OVS and tc print it; "" no match
	admits func(string) bool // of a guest's MAC
}

func ethShapes(a, b string) (src, dst []ethShape) {
	all := func(string) bool { return true }
	is := func(m string) func(string) bool { return func(x string) bool { return x == m } }
	none := func(string) bool { return false }
	src = []ethShape{{a, is(a)}, {b, is(b)}, {thirdMAC, none}, {"", all},
		{a[:9] + "00:00:00/ff:ff:ff:00:00:00", func(x string) bool { return x[:9] == a[:9] }}}
	dst = append(src[:len(src):len(src)],
		ethShape{"00:00:00:00:00:00/01:00:00:00:00:00", func(x string) bool { return !isGroupMAC(x) }},
		ethShape{"01:00:00:00:00:00/01:00:00:00:00:00", none},
		ethShape{"ff:ff:ff:ff:ff:ff", none})
	return src, dst
}

// judgedOffloaded reports whether a basis line says a direction covering
// src -> dst is offloaded ("direction A -> B: offloaded, ...", "direction ->
// B (decap, by inner destination only): offloaded", "direction A -> (decap,
// by inner source only): offloaded"; an unnamed end is the other guest).
func judgedOffloaded(basis []string, src, dst string) bool {
	for _, l := range basis {
		_, rest, ok := strings.Cut(l, "direction ")
		if !ok {
			continue
		}
		key, state, ok := strings.Cut(rest, ": ")
		if !ok || !strings.HasPrefix(state, "offloaded") {
			continue
		}
		from, to, _ := strings.Cut(key, "->")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if strings.HasPrefix(to, "(") {
			to = ""
		}
		to, _, _ = strings.Cut(to, " ")
		if (from == "" || from == src) && (to == "" || to == dst) {
			return true
		}
	}
	return false
}

// extraShape is one extra flow or rule: its MAC matches, a tunnel match
// or none, and where it runs (in hardware, OVS's datapath, TC software).
type extraShape struct {
	pair   [2]string
	sm, dm ethShape
	decap  bool
	where  string
}

// extraShapes are every shape of the extra, for both pairs of the seeds.
func extraShapes() []extraShape {
	var out []extraShape
	for _, pair := range [][2]string{{pipeMACA, pipeMACB}, {kubeMAC1, kubeMAC2}} {
		srcs, dsts := ethShapes(pair[0], pair[1])
		for _, sm := range srcs {
			for _, dm := range dsts {
				for _, decap := range []bool{false, true} {
					for _, where := range []string{"offloaded:yes, dp:tc", "dp:ovs", "dp:tc"} {
						out = append(out, extraShape{pair, sm, dm, decap, where})
					}
				}
			}
		}
	}
	return out
}

// bothDirections checks the invariant on data (a dpctl dump or a tc
// listing, whichever parses) with the extras given.
func bothDirections(t *testing.T, data []byte, shapes []extraShape) {
	flows, errD := ParseDpctl(data)
	dump, errT := ParseTC(data)
	for _, x := range shapes {
		macs := []string{x.pair[0], x.pair[1]}
		if errD == nil {
			bothDirectionsDpctl(t, flows, macs, x.sm, x.dm, x.decap, x.where)
		}
		if errT == nil {
			bothDirectionsTC(t, dump, macs, x.sm, x.dm, x.decap, x.where)
		}
	}
}

// Every shape of the extra beside every recorded or written dump.
func TestPipelineBothDirections(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata: %v", err)
	}
	shapes := extraShapes()
	for _, name := range files {
		if strings.Contains(name, "dpctl-") || strings.Contains(name, "tc-") {
			bothDirections(t, readTestdata(t, strings.TrimPrefix(name, "testdata/")), shapes)
		}
	}
}

// The fuzzer checks eight shapes per input, picked by its bytes (all of
// them per input would cost a few hundred judgements a call).
func FuzzPipelineBothDirections(f *testing.F) {
	seed(f, "pipeline/dpctl-*.txt", "hw/dpctl-*.txt", "pipeline/tc-*.txt", "hw/tc-*.txt")
	shapes := extraShapes()
	f.Fuzz(func(t *testing.T, data []byte) {
		h := crc32.ChecksumIEEE(data)
		var pick []extraShape
		for i := uint32(0); i < 8; i++ {
			pick = append(pick, shapes[(h+i*97)%uint32(len(shapes))])
		}
		bothDirections(t, data, pick)
	})
}

// mustJudgeBoth fails when an offloaded verdict left a direction that the
// extra stage's match admits unjudged.
func mustJudgeBoth(t *testing.T, what string, v results.Verdict, why string, basis []string, macs []string, sm, dm ethShape) {
	t.Helper()
	if v != results.VerdictOffloaded {
		return
	}
	for _, w := range [][2]string{{macs[0], macs[1]}, {macs[1], macs[0]}} {
		if sm.admits(w[0]) && dm.admits(w[1]) && !judgedOffloaded(basis, w[0], w[1]) {
			t.Fatalf("%s: offloaded without judging %s -> %s, which the growing extra (src %q, dst %q) may carry:\n%s\nbasis %q", what, w[0], w[1], sm.match, dm.match, why, basis)
		}
	}
}

func bothDirectionsDpctl(t *testing.T, flows []DpctlFlow, macs []string, sm, dm ethShape, decap bool, where string) {
	eth := []string{}
	if sm.match != "" {
		eth = append(eth, "src="+sm.match)
	}
	if dm.match != "" {
		eth = append(eth, "dst="+dm.match)
	}
	tunnel := ""
	if decap {
		tunnel = "tunnel(tun_id=0x5,src=198.18.1.12,dst=198.18.1.11,tp_dst=6081,flags(+key)),"
	}
	extra := func(n int) DpctlFlow {
		line := fmt.Sprintf("ufid:fe000000-0000-4000-8000-00000000fuzz, %srecirc_id(0),in_port(fuzz_in),eth(%s),eth_type(0x0800),ipv4(frag=no), packets:%d, bytes:%d, used:0.100s, %s, actions:fuzz_out",
			tunnel, strings.Join(eth, ","), n, 1400*n, where)
		fl, err := parseDpctlLine(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return fl
	}
	before := append(append([]DpctlFlow(nil), flows...), extra(1000))
	after := make([]DpctlFlow, 0, len(before))
	for _, fl := range flows {
		fl.Packets += 1000
		fl.Offloaded, fl.DP = "yes", "tc"
		after = append(after, fl)
	}
	after = append(after, extra(900000))
	v, why, basis := JudgeDpctlBasis(DpctlSamples{Offloaded: [][]DpctlFlow{before, after}, Window: time.Hour}, macs)
	mustJudgeBoth(t, "dpctl", v, why, basis, macs, sm, dm)
}

func bothDirectionsTC(t *testing.T, d TCDump, macs []string, sm, dm ethShape, decap bool, where string) {
	inHW := func(f *TCFilter) {
		f.InHW, f.NotInHW, f.SkipHW, f.InHWCount = true, false, false, 1
		for j := range f.Actions {
			f.Actions[j].Packets += 1000
			f.Actions[j].HWPackets += 1000
		}
	}
	grown := tcOutputsChanged(d, inHW, inHW)
	rule := func(n uint64) TCFilter {
		keys := map[string]string{"eth_type": "ipv4"}
		if sm.match != "" {
			keys["src_mac"] = sm.match
		}
		if dm.match != "" {
			keys["dst_mac"] = dm.match
		}
		if decap {
			keys["enc_key_id"], keys["enc_dst_port"] = "5", "6081"
		}
		f := TCFilter{Protocol: "ip", Pref: 2, Kind: "flower", Handle: "0x1", Keys: keys, InHWCount: -1,
			Actions: []TCAction{{Order: 1, Kind: "mirred", ToDev: "fuzz_out", Packets: n, HasStats: true}}}
		switch where {
		case "offloaded:yes, dp:tc":
			f.InHW, f.InHWCount, f.Actions[0].HWPackets = true, 1, n
		default:
			f.NotInHW, f.InHWCount = true, 0
		}
		return f
	}
	obs := []TCObservation{
		{Device: "enp8s0f0_1", Samples: []TCDump{d, grown}, Window: time.Hour},
		{Device: geneveDev, Samples: []TCDump{{Format: "text", Filters: []TCFilter{rule(1000)}}, {Format: "text", Filters: []TCFilter{rule(900000)}}}, Window: time.Hour},
	}
	v, why, basis := JudgeTCNetwork(obs, macs, "")
	mustJudgeBoth(t, "tc", v, why, basis, macs, sm, dm)
}
