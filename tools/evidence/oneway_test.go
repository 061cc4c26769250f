package main

import (
	"strings"
	"testing"
)

// A one-way UDP flow re-checked offline (e2e/offload's oneway_test.go,
// the same inputs): without --one-way the flat return direction keeps the
// verdict inconclusive, with it the return direction is idle, as expected,
// and the stream's direction decides; given the wrong way round it is not
// offloaded. --one-way must name the two MACs of --mac.
func TestOneWayUDP(t *testing.T) {
	pair := pairA + "," + pairB
	tc := func(extra ...string) []string {
		return append(append([]string{"tc", "--mac", pair, "--device", "enp8s0f0_1", "--span", "4s",
			"--with", "genev_sys_6081=" + pipeTD("tc-udp-oneway-decap-1.txt") + "," + pipeTD("tc-udp-oneway-decap-2.txt")}, extra...),
			pipeTD("tc-udp-oneway-encap-1.txt"), pipeTD("tc-udp-oneway-encap-2.txt"))
	}
	dpctl := func(extra ...string) []string {
		return append(append([]string{"dpctl", "--mac", pair, "--type", "offloaded"}, extra...), pipeTD("dpctl-udp-oneway-1.txt"), pipeTD("dpctl-udp-oneway-2.txt"))
	}
	for _, c := range []struct {
		name, verdict string
		args          []string
		reason        string
	}{
		{"tc, both ways", "inconclusive", tc(), "did not grow"},
		{"tc, one way", "offloaded", tc("--one-way", pairB+","+pairA), pairA + " -> " + pairB + ": idle: carried nothing"},
		{"tc, the wrong way round", "inconclusive", tc("--one-way", pairA+","+pairB), "did not grow"},
		{"dpctl, both ways", "inconclusive", dpctl(), "did not grow"},
		{"dpctl, one way", "offloaded", dpctl("--one-way", pairB+","+pairA), pairA + " -> " + pairB + ": idle: carried nothing"},
		{"dpctl, the wrong way round", "inconclusive", dpctl("--one-way", pairA+","+pairB), "did not grow"},
	} {
		code, m, stderr := runCmd(t, c.args...)
		reason, _ := m["reason"].(string)
		if code != 0 || m["verdict"] != c.verdict || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: exit %d %v %s %s", c.name, code, m["verdict"], reason, stderr)
		}
	}
	for _, bad := range []string{pairA, pairA + "," + pairA, pairA + ",fa:16:3e:4a:11:09"} {
		if code, _, stderr := runCmd(t, "dpctl", "--mac", pair, "--one-way", bad, pipeTD("dpctl-udp-oneway-1.txt")); code != 2 || !strings.Contains(stderr, "--one-way") {
			t.Errorf("--one-way %s: exit %d %s", bad, code, stderr)
		}
	}
}
