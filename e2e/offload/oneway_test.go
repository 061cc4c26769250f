package offload

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A one-way UDP flow on healthy hardware (issue 33's leftover). iperf3 UDP
// from B (the client, behind the Geneve tunnel) to A (the server, on this
// hypervisor): the stream B -> A crosses genev_sys_6081's decap rule, in
// hardware and growing; A -> B carries nothing while the test runs (the
// server sends no UDP back, the control connection is idle), so the
// representor's encap rule, installed at the test's start with the ten
// packets of iperf3's setup, stands flat in hardware. Inputs:
// testdata/pipeline/*udp-oneway* (README.md), offload.settle's default 3 s
// in (OVS deletes a datapath flow idle for 10 s, after which the direction
// has no rule at all and was already read as quiet).

// udpOneWay is the flow: B's client to A's server.
var udpOneWay = &OneWay{From: pipeMACB, To: pipeMACA}

func udpOneWayTC(t *testing.T) []TCObservation {
	t.Helper()
	return []TCObservation{
		{Device: "enp8s0f0_1", Samples: pipeTCSamples(t, "tc-udp-oneway-encap"), Span: 4 * time.Second, Window: 8 * time.Second},
		{Device: geneveDev, Samples: pipeTCSamples(t, "tc-udp-oneway-decap"), Span: 4 * time.Second, Window: 8 * time.Second},
	}
}

// Before the fix the answer was inconclusive in both checks ("in hardware,
// but the hardware packet counters did not grow" on A -> B); without the
// flow's direction (TCP, or a caller that does not give it) it still is:
// a flat direction of a two-way flow proves nothing.
func TestOneWayUDPReturnFlatWithoutTheFlow(t *testing.T) {
	v, why, _ := JudgeTCNetwork(udpOneWayTC(t), pipePair, results.NetworkGeneve)
	expectVerdict(t, "tc", v, why, results.VerdictInconclusive,
		"direction "+pipeMACA+" -> "+pipeMACB+": inconclusive: in hardware, but the hardware packet counters did not grow")
	v, why = JudgeDpctl(DpctlSamples{Offloaded: pipeDpctlSamples(t, "dpctl-udp-oneway"), OffloadedIsTyped: true, Window: 8 * time.Second, Network: results.NetworkGeneve}, pipePair)
	expectVerdict(t, "dpctl", v, why, results.VerdictInconclusive,
		"direction "+pipeMACA+" -> "+pipeMACB+": inconclusive: in hardware, but the hardware packet counters did not grow")
}

// With the flow's direction: the stream's direction is judged offloaded,
// the return direction is named idle, as expected, and the node is
// offloaded, in tc and in dpctl.
func TestOneWayUDPReturnFlatIsIdle(t *testing.T) {
	v, why, basis := JudgeTCFlow(udpOneWayTC(t), pipePair, results.NetworkGeneve, udpOneWay)
	expectVerdict(t, "tc", v, why, results.VerdictOffloaded,
		geneveDev+": direction "+pipeMACB+" -> "+pipeMACA+": offloaded", "hardware packets +6028543",
		"enp8s0f0_1: direction "+pipeMACA+" -> "+pipeMACB+": idle: carried nothing", "the return direction of a one-way UDP flow")
	if !judgedOffloaded(basis, pipeMACB, pipeMACA) {
		t.Errorf("basis does not judge the stream's direction offloaded: %q", basis)
	}
	v, why, basis = JudgeDpctlBasis(DpctlSamples{Offloaded: pipeDpctlSamples(t, "dpctl-udp-oneway"), OffloadedIsTyped: true, Window: 8 * time.Second, Network: results.NetworkGeneve, OneWay: udpOneWay}, pipePair)
	expectVerdict(t, "dpctl", v, why, results.VerdictOffloaded,
		"direction "+pipeMACB+" -> "+pipeMACA+": offloaded", "direction "+pipeMACA+" -> "+pipeMACB+": idle: carried nothing")
	if !judgedOffloaded(basis, pipeMACB, pipeMACA) {
		t.Errorf("dpctl basis does not judge the stream's direction offloaded: %q", basis)
	}
}

// What the flow's direction must not open: a false offloaded.
func TestOneWayUDPNeverOpensAFalseOffloaded(t *testing.T) {
	dp := func(s [][]DpctlFlow, w *OneWay) (results.Verdict, string) {
		return JudgeDpctl(DpctlSamples{Offloaded: s, OffloadedIsTyped: true, Window: 8 * time.Second, Network: results.NetworkGeneve, OneWay: w}, pipePair)
	}
	// The direction given the wrong way round: the flat direction is the
	// stream's, which must grow.
	wrong := &OneWay{From: pipeMACA, To: pipeMACB}
	v, why, _ := JudgeTCFlow(udpOneWayTC(t), pipePair, results.NetworkGeneve, wrong)
	expectVerdict(t, "tc, reversed", v, why, results.VerdictInconclusive, "did not grow")
	v, why = dp(pipeDpctlSamples(t, "dpctl-udp-oneway"), wrong)
	expectVerdict(t, "dpctl, reversed", v, why, results.VerdictInconclusive, "did not grow")

	// The return direction carried packets in software (the encap rule
	// not_in_hw, counting): judged, never idle.
	sw := func(name string) TCDump {
		s := strings.Replace(string(readTestdata(t, "pipeline/"+name)), "in_hw in_hw_count 1", "not_in_hw", 1)
		s = strings.NewReplacer("Sent software 0 bytes 0 pkt\n", "", "        Sent hardware 778 bytes 10 pkt\n", "").Replace(s)
		if strings.HasSuffix(name, "-2.txt") {
			s = strings.Replace(s, "Sent 778 bytes 10 pkt", "Sent 77800 bytes 1000 pkt", 1)
		}
		return tcText(t, s)
	}
	obs := udpOneWayTC(t)
	obs[0].Samples = []TCDump{sw("tc-udp-oneway-encap-1.txt"), sw("tc-udp-oneway-encap-2.txt")}
	v, why, _ = JudgeTCFlow(obs, pipePair, results.NetworkGeneve, udpOneWay)
	if v == results.VerdictOffloaded || strings.Contains(why, "idle: carried nothing") {
		t.Errorf("return direction counting in software: %s %s", v, why)
	}
	s := pipeDpctlSamples(t, "dpctl-udp-oneway")
	s[1][0].Packets += 990
	s[1][0].Offloaded, s[1][0].DP = "", "ovs"
	v, why = dp(s, udpOneWay)
	if v == results.VerdictOffloaded || strings.Contains(why, "idle: carried nothing") {
		t.Errorf("dpctl: return direction counting in software: %s %s", v, why)
	}

	// The return direction's rule flat, but a flow outside the pair's
	// pipelines that may carry it (no source MAC, any unicast destination;
	// dp:ovs) counted packets: the direction is not judged, inconclusive.
	unknown := pipeDpctl(t, "dpctl-geneve-decap-unknown-1.txt")[1]
	s = pipeDpctlSamples(t, "dpctl-udp-oneway")
	s[0] = append(s[0], unknown)
	unknown.Packets += 500000
	s[1] = append(s[1], unknown)
	v, why = dp(s, udpOneWay)
	expectVerdict(t, "a carrier of the return direction counted", v, why, results.VerdictInconclusive,
		"direction "+pipeMACA+" -> "+pipeMACB+" not judged")

	// Only the return direction examined (the representor alone, flat):
	// nothing carried the measured traffic, never offloaded.
	v, why, _ = JudgeTCFlow(udpOneWayTC(t)[:1], pipePair, results.NetworkGeneve, udpOneWay)
	expectVerdict(t, "the return direction alone", v, why, results.VerdictInconclusive, "only pipelines are the one-way flow's return direction")
	one := pipeDpctlSamples(t, "dpctl-udp-oneway")
	v, why = dp([][]DpctlFlow{one[0][:1], one[1][:1]}, udpOneWay)
	expectVerdict(t, "dpctl, the return direction alone", v, why, results.VerdictInconclusive, "one-way flow's return direction")

	// The stream's direction flat too: inconclusive.
	flat := pipeDpctlSamples(t, "dpctl-udp-oneway")
	flat[1][1].Packets = flat[0][1].Packets
	v, why = dp(flat, udpOneWay)
	expectVerdict(t, "both flat", v, why, results.VerdictInconclusive, "direction "+pipeMACB+" -> "+pipeMACA+": inconclusive")
}

// Over every recorded or written two-sample input: giving a flow's
// direction (either way round) changes no offloaded verdict, and turns
// another into offloaded only when the stream's own direction (From ->
// To) is judged offloaded.
func TestOneWayOnlyEverExcusesTheReturn(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*-1.txt"))
	n := 0
	for _, first := range files {
		a, err := os.ReadFile(strings.TrimSuffix(first, "-1.txt") + "-2.txt")
		if err != nil {
			continue
		}
		b := readTestdata(t, strings.TrimPrefix(first, "testdata/"))
		for _, w := range []*OneWay{{From: pipeMACA, To: pipeMACB}, {From: pipeMACB, To: pipeMACA}} {
			d1, err1 := ParseTC(b)
			d2, err2 := ParseTC(a)
			if err1 == nil && err2 == nil {
				for _, dev := range []string{"enp8s0f0_1", geneveDev} {
					oneWayHolds(t, first+" on "+dev, w, func(w *OneWay) (results.Verdict, string, []string) {
						return JudgeTCFlow([]TCObservation{{Device: dev, Samples: []TCDump{d1, d2}, Window: time.Hour}}, pipePair, "", w)
					})
					n++
				}
			}
			f1, err1 := ParseDpctl(b)
			f2, err2 := ParseDpctl(a)
			if err1 == nil && err2 == nil {
				oneWayHolds(t, first, w, func(w *OneWay) (results.Verdict, string, []string) {
					return JudgeDpctlBasis(DpctlSamples{Offloaded: [][]DpctlFlow{f1, f2}, Window: time.Hour, OneWay: w}, pipePair)
				})
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no input judged")
	}
}

// oneWayHolds checks the invariant of a flow's direction: with it, no
// offloaded verdict changes, and another becomes offloaded only when the
// stream's own direction (w.From -> w.To) is judged offloaded.
func oneWayHolds(t *testing.T, what string, w *OneWay, judge func(*OneWay) (results.Verdict, string, []string)) {
	t.Helper()
	v0, why0, _ := judge(nil)
	v, why, basis := judge(w)
	switch {
	case v0 == results.VerdictOffloaded && v != v0:
		t.Fatalf("%s, flow %s -> %s: offloaded without the flow's direction, %s with it: %s", what, w.From, w.To, v, why)
	case v0 != results.VerdictOffloaded && v == results.VerdictOffloaded && !judgedOffloaded(basis, w.From, w.To):
		t.Fatalf("%s, flow %s -> %s: offloaded without the stream's direction judged offloaded (without the flow's direction: %s %s): %s %q", what, w.From, w.To, v0, why0, why, basis)
	}
}

// The same invariant on any dump the parsers accept, its flows or rules
// grown in hardware, in software or not at all between the samples (each
// by the input's hash), for the seeds' guest pairs both ways round.
func FuzzOneWay(f *testing.F) {
	seed(f, "pipeline/dpctl-*.txt", "hw/dpctl-*.txt", "pipeline/tc-*.txt", "hw/tc-*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		h := crc32.ChecksumIEEE(data)
		grow := func(i int) uint32 { return (h >> (2 * (i % 16))) & 3 } // 0 flat, 2 software, 1 and 3 hardware
		flows, errD := ParseDpctl(data)
		dump, errT := ParseTC(data)
		var after []DpctlFlow
		if errD == nil {
			for i, fl := range flows {
				switch grow(i) {
				case 1, 3:
					fl.Packets += 1000
					fl.Offloaded, fl.DP = "yes", "tc"
				case 2:
					fl.Packets += 1000
					fl.Offloaded, fl.DP = "", "ovs"
				}
				after = append(after, fl)
			}
		}
		var grown TCDump
		if errT == nil {
			grown = TCDump{Format: dump.Format, Filters: make([]TCFilter, len(dump.Filters))}
			for i, fl := range dump.Filters {
				fl.Actions = append([]TCAction(nil), fl.Actions...)
				switch grow(i) {
				case 1, 3:
					fl.InHW, fl.NotInHW, fl.SkipHW, fl.InHWCount = true, false, false, 1
					for j := range fl.Actions {
						fl.Actions[j].Packets += 1000
						fl.Actions[j].HWPackets += 1000
					}
				case 2:
					fl.InHW, fl.NotInHW, fl.InHWCount = false, true, 0
					for j := range fl.Actions {
						fl.Actions[j].Packets += 1000
						fl.Actions[j].SWPackets += 1000
						fl.Actions[j].HWPackets = 0
					}
				}
				grown.Filters[i] = fl
			}
		}
		for _, pair := range [][2]string{{pipeMACA, pipeMACB}, {kubeMAC1, kubeMAC2}, {mlxMACLocal, mlxMACRemote}} {
			macs := pair[:]
			for _, w := range []*OneWay{{From: pair[0], To: pair[1]}, {From: pair[1], To: pair[0]}} {
				if errD == nil {
					oneWayHolds(t, "dpctl", w, func(w *OneWay) (results.Verdict, string, []string) {
						return JudgeDpctlBasis(DpctlSamples{Offloaded: [][]DpctlFlow{flows, after}, Window: time.Hour, OneWay: w}, macs)
					})
				}
				if errT == nil {
					for _, dev := range []string{"enp8s0f0_1", geneveDev} {
						oneWayHolds(t, "tc on "+dev, w, func(w *OneWay) (results.Verdict, string, []string) {
							return JudgeTCFlow([]TCObservation{{Device: dev, Samples: []TCDump{dump, grown}, Window: time.Hour}}, macs, "", w)
						})
					}
				}
			}
		}
	})
}
