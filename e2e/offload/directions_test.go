package offload

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 33, class 6: a direction that was not judged cannot be offloaded.
// Both directions of the pair's traffic cross every hypervisor that hosts
// one of the guests; when one of them is not found in a shape the judge
// understands while a flow that could carry it counted packets, the
// verdict is inconclusive and names the direction. Inputs:
// testdata/pipeline/*-decap-unknown-* (README.md).

// dpctl: A -> B offloaded and growing; B -> A carried by a Geneve decap flow
// on dp:ovs whose eth() matches no source and only the multicast bit of
// the destination, growing by the whole stream. Old code: offloaded ("every
// stage in hardware" on A -> B alone).
func TestDpctlUnjudgedDirectionIsInconclusive(t *testing.T) {
	s := DpctlSamples{Offloaded: pipeDpctlSamples(t, "dpctl-geneve-decap-unknown"), Window: 4 * time.Second, Network: results.NetworkGeneve}
	v, why := JudgeDpctl(s, pipePair)
	expectVerdict(t, "unknown decap shape on dp:ovs", v, why, results.VerdictInconclusive,
		"direction "+pipeMACB+" -> "+pipeMACA+" not judged", "in_port(genev_sys_6081)", "dp:ovs", "packets +6028543",
		"direction "+pipeMACA+" -> "+pipeMACB+": offloaded")
	// The same flow offloaded: still a shape the judge cannot tie to the
	// pair, still no proof of B -> A.
	off := func(name string) []DpctlFlow {
		return mustDpctlString(t, strings.Replace(string(readTestdata(t, "pipeline/"+name)), "dp:ovs, actions:enp8s0f0_1", "offloaded:yes, dp:tc, actions:enp8s0f0_1", 1))
	}
	s.Offloaded = [][]DpctlFlow{off("dpctl-geneve-decap-unknown-1.txt"), off("dpctl-geneve-decap-unknown-2.txt")}
	v, why = JudgeDpctl(s, pipePair)
	expectVerdict(t, "unknown decap shape offloaded", v, why, results.VerdictInconclusive, "direction "+pipeMACB+" -> "+pipeMACA+" not judged")
}

// tc: the representor's encap rule (A -> B) in hardware and growing; on
// genev_sys_6081 the only decap rule matches no source and the multicast
// bit of the destination, not_in_hw, counting the whole stream. Old code:
// offloaded (genev_sys_6081: "no rule of the guest pair").
func TestTCUnjudgedDirectionIsInconclusive(t *testing.T) {
	v, why, _ := JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap-unknown"), pipePair, results.NetworkGeneve)
	expectVerdict(t, "unknown decap shape not_in_hw", v, why, results.VerdictInconclusive,
		"direction "+pipeMACB+" -> "+pipeMACA+" not judged", "dst_mac 00:00:00:00:00:00/01:00:00:00:00:00", "not_in_hw")
}

// The other side of the rule: a direction with no flow at all while
// nothing that could carry it counted a packet (a one-way UDP flow; the
// tunnel device not examined) leaves an offloaded verdict standing, and the
// reason says so. A flow of the pair's other direction that counted
// nothing is not a carrier either.
func TestQuietDirectionIsNamedNotBlocking(t *testing.T) {
	oneWay := func(name string) []DpctlFlow {
		return mustDpctlString(t, strings.SplitAfter(string(readTestdata(t, "pipeline/"+name)), "\n")[0])
	}
	s := DpctlSamples{Offloaded: [][]DpctlFlow{oneWay("dpctl-geneve-offloaded-1.txt"), oneWay("dpctl-geneve-offloaded-2.txt")}, Window: 4 * time.Second}
	v, why := JudgeDpctl(s, pipePair)
	expectVerdict(t, "one way only", v, why, results.VerdictOffloaded,
		"direction "+pipeMACB+" -> "+pipeMACA+": no pipeline of it, and nothing examined that could carry it counted a packet")
	// The unknown decap flow idle (its packets as in the first sample).
	idle := pipeDpctl(t, "dpctl-geneve-decap-unknown-2.txt")
	idle[1].Packets = pipeDpctl(t, "dpctl-geneve-decap-unknown-1.txt")[1].Packets
	s.Offloaded = [][]DpctlFlow{pipeDpctl(t, "dpctl-geneve-decap-unknown-1.txt"), idle}
	v, why = JudgeDpctl(s, pipePair)
	expectVerdict(t, "unknown decap flow idle", v, why, results.VerdictOffloaded, "no pipeline of it")
	// tc: the representor alone.
	v, why, _ = JudgeTCNetwork(geneveObs(t, "tc-geneve-encap", "tc-geneve-decap")[:1], pipePair, results.NetworkGeneve)
	expectVerdict(t, "representor alone", v, why, results.VerdictOffloaded, "direction "+pipeMACB+" -> "+pipeMACA+": no pipeline of it")
}
