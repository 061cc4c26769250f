package offload

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 33, class 3, the harness's conntrack check: iperf3's control
// connection left the flowtable (ESTABLISHED [ASSURED], no [HW_OFFLOAD])
// while every data connection is [HW_OFFLOAD]. The check is offloaded and
// its reason names the control connection as expected software. Old code:
// software ("kernel conntrack: 2 of 3 connections the run opened are
// [HW_OFFLOAD] (67%); 1 tracked in software").
func TestJudgeConntrackIdleControlConnection(t *testing.T) {
	client, server := netip.MustParseAddr("198.18.212.1"), netip.MustParseAddr("198.18.212.2")
	ev := ctEvidence(ctFile(t, "hw/proc-iperf3-udp-p2-control-idle.txt"), nil, readTestdata(t, "pipeline/dpctl-ct-offloaded-1.txt"))
	c := JudgeConntrack(ev, conntrack.IperfFlows(true, 2, client, server, 5201), ctHWMACs)
	if c.Verdict != results.VerdictOffloaded {
		t.Fatalf("got %s (%s), want offloaded", c.Verdict, c.Reason)
	}
	for _, want := range []string{"iperf3's control connection", "sport 41626", "expected"} {
		if !strings.Contains(c.Reason, want) {
			t.Errorf("reason %q lacks %q", c.Reason, want)
		}
	}
}
