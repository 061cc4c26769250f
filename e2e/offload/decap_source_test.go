package offload

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 33, class 4: decap matched by the inner source only. OVN without
// port security matches the decap direction on the inner source MAC and on
// the multicast bit of the destination alone (ovn-org/ovn#160, the flow of
// hw/dpctl-ovn160-geneve-offloaded.txt:
// eth(src=00:00:00:01:00:01,dst=00:00:00:00:00:00/01:00:00:00:00:00)); OVS
// hands that match to tc flower as it is, and iproute2 prints a mask that
// is no prefix in full (tc/f_flower.c, flower_print_eth_addr:
// "dst_mac 00:00:00:00:00:00/01:00:00:00:00:00"). Inputs:
// testdata/pipeline/*srconly* (README.md).

// srcOnlyOtherWay is the same decap shape on the other guest's hypervisor:
// the inner source is A, the rule or flow outputs to B's representor.
func srcOnlyOtherWay(s string) string {
	return strings.NewReplacer(pipeMACA, pipeMACB, pipeMACB, pipeMACA, "enp8s0f0_1", "enp8s0f0_2").Replace(s)
}

// tc on genev_sys_6081: the pair's only decap rule matches src_mac B and
// the multicast bit of dst_mac, in hardware and growing. It is the pair's
// direction B -> A, judged and offloaded; beside the representor's encap
// rule (both MACs) the hypervisor is offloaded. Old code: "no rule of the
// guest pair" on genev_sys_6081, and software when that device is judged
// alone.
func TestTCDecapByInnerSourceIsThePair(t *testing.T) {
	srcOnlyKey := pipeMACB + " -> (decap, by inner source only)"
	v, why, basis := JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap-srconly"), pipePair, results.NetworkGeneve)
	expectVerdict(t, "encap and source-only decap", v, why, results.VerdictOffloaded,
		"enp8s0f0_1: direction "+pipeMACA+" -> "+pipeMACB+": offloaded",
		geneveDev+": direction "+srcOnlyKey+": offloaded", "dst_mac 00:00:00:00:00:00/01:00:00:00:00:00", "hardware packets +6028543")
	if len(basis) != 2 || !strings.HasPrefix(basis[1], geneveDev+": direction "+srcOnlyKey+": offloaded") {
		t.Errorf("basis %q", basis)
	}
	// The tunnel device alone: the pair's rule, recognised; matched by one
	// inner MAC only, so no proof of the pair by itself (as a rule matched
	// by the inner destination alone), but never "software".
	v, why, _ = JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap-srconly")[1:], pipePair, results.NetworkGeneve)
	expectVerdict(t, "source-only decap alone", v, why, results.VerdictInconclusive,
		"direction "+srcOnlyKey+": offloaded", "no rule with both guests' MACs")

	// The other direction: the same shape on B's hypervisor (inner source A).
	other := func(name string) TCDump { return tcText(t, srcOnlyOtherWay(string(readTestdata(t, "pipeline/"+name)))) }
	obs := []TCObservation{
		{Device: "enp8s0f0_2", Samples: []TCDump{other("tc-geneve-encap-1.txt"), other("tc-geneve-encap-2.txt")}, Window: 4 * time.Second},
		{Device: geneveDev, Samples: []TCDump{other("tc-geneve-decap-srconly-1.txt"), other("tc-geneve-decap-srconly-2.txt")}, Window: 4 * time.Second},
	}
	v, why, _ = JudgeTCNetwork(obs, pipePair, results.NetworkGeneve)
	expectVerdict(t, "source-only decap, other way", v, why, results.VerdictOffloaded,
		"enp8s0f0_2: direction "+pipeMACB+" -> "+pipeMACA+": offloaded",
		geneveDev+": direction "+pipeMACA+" -> (decap, by inner source only): offloaded")

	// The same rule not_in_hw and counting: software, named as the pair's.
	sw := func(name string) TCDump {
		return tcText(t, strings.Replace(string(readTestdata(t, "pipeline/"+name)), "in_hw in_hw_count 1", "not_in_hw", 1))
	}
	obs = []TCObservation{geneveObs(t, "tc-geneve-encap", "tc-geneve-decap")[0],
		{Device: geneveDev, Samples: []TCDump{sw("tc-geneve-decap-srconly-1.txt"), sw("tc-geneve-decap-srconly-2.txt")}, Window: 4 * time.Second}}
	v, why, _ = JudgeTCNetwork(obs, pipePair, results.NetworkGeneve)
	expectVerdict(t, "source-only decap in software", v, why, results.VerdictInconclusive,
		"some devices offload the guests' flows and others do not", geneveDev+": direction "+srcOnlyKey+": software")
}

// dpctl: the same shape as a datapath flow (ovn-org/ovn#160's match on
// pipeline/dpctl-geneve-offloaded). Offloaded, with the decap direction
// judged and named; in software (dp:ovs) it is the pair's direction in
// software, never an unrelated flow beside an offloaded one. Both ways.
// Old code: offloaded in all four cases, the decap flow unnamed ("one
// offloaded direction decides alone").
func TestDpctlDecapByInnerSourceIsThePair(t *testing.T) {
	for _, way := range []struct {
		name  string
		fix   func(string) string
		key   string
		other string
	}{
		{"A's hypervisor", func(s string) string { return s }, pipeMACB + " -> (decap, by inner source only)", pipeMACA + " -> " + pipeMACB},
		{"B's hypervisor", srcOnlyOtherWay, pipeMACA + " -> (decap, by inner source only)", pipeMACB + " -> " + pipeMACA},
	} {
		samples := func(sw bool) [][]DpctlFlow {
			var out [][]DpctlFlow
			for _, n := range []string{"1", "2"} {
				s := way.fix(string(readTestdata(t, "pipeline/dpctl-geneve-srconly-"+n+".txt")))
				if sw {
					s = strings.Replace(s, "offloaded:yes, dp:tc, actions:enp8s0f0", "dp:ovs, actions:enp8s0f0", 1)
				}
				out = append(out, mustDpctlString(t, s))
			}
			return out
		}
		v, why := JudgeDpctl(DpctlSamples{Offloaded: samples(false), OffloadedIsTyped: true, Window: 4 * time.Second, Network: results.NetworkGeneve}, pipePair)
		expectVerdict(t, way.name+": source-only decap offloaded", v, why, results.VerdictOffloaded,
			"direction "+way.other+": offloaded", "direction "+way.key+": offloaded", "dst=00:00:00:00:00:00/01:00:00:00:00:00")
		v, why = JudgeDpctl(DpctlSamples{Offloaded: samples(true), Window: 4 * time.Second, Network: results.NetworkGeneve}, pipePair)
		expectVerdict(t, way.name+": source-only decap in software", v, why, results.VerdictInconclusive,
			"mixed", "direction "+way.key+": software", "dp:ovs")
	}
}

// The MAC matches tc and OVS print, masks included.
func TestMACMatch(t *testing.T) {
	for _, c := range []struct {
		match        string
		admits, bars []string
		unicast, bad bool
	}{
		{"", []string{pipeMACA, "01:00:5e:00:00:fb"}, nil, true, false},
		{pipeMACA, []string{pipeMACA}, []string{pipeMACB}, true, false},
		{pipeMACA + "/48", []string{pipeMACA}, []string{pipeMACB}, true, false},
		{"FA:16:3E:4A:11:01/ff:ff:ff:ff:ff:ff", []string{pipeMACA}, []string{pipeMACB}, true, false},
		{"fa:16:3e:00:00:00/24", []string{pipeMACA, pipeMACB}, []string{thirdMAC}, true, false},
		{"00:00:00:00:00:00/01:00:00:00:00:00", []string{pipeMACA, thirdMAC}, []string{"01:00:5e:00:00:fb", "ff:ff:ff:ff:ff:ff"}, true, false},
		{"01:00:00:00:00:00/01:00:00:00:00:00", []string{"01:00:5e:00:00:fb"}, []string{pipeMACA}, false, false},
		{"00:00:00:00:00:00/00:00:00:00:00:00", []string{pipeMACA, "ff:ff:ff:ff:ff:ff"}, nil, true, false},
		{"fa:16:3e:4a:11:01/xyz", []string{pipeMACA, pipeMACB}, nil, true, true},
		{"not-a-mac", []string{pipeMACB}, nil, true, true},
	} {
		m := parseMACMatch(c.match)
		if m.bad != c.bad || m.admitsUnicast() != c.unicast {
			t.Errorf("%q: %+v, unicast %v", c.match, m, m.admitsUnicast())
		}
		for _, a := range c.admits {
			if !m.admits(a) {
				t.Errorf("%q does not admit %s", c.match, a)
			}
		}
		for _, b := range c.bars {
			if m.admits(b) {
				t.Errorf("%q admits %s", c.match, b)
			}
		}
	}
}
