package conntrack

import (
	"strings"
	"testing"
)

// Issue 33, class 3: idle connections leave the flowtable. iperf3's control
// connection carries nothing while the test runs; the kernel hands a flow
// back to conntrack after nf_flowtable_tcp_timeout (30 s) without packets
// (net/netfilter/nf_flow_table_core.c, nf_flow_offload_gc_step →
// flow_offload_teardown → flow_offload_fixup_ct), so after 30 s the control
// connection reads ESTABLISHED [ASSURED] without [HW_OFFLOAD]; kernels
// 5.13–5.17 (and older ones with a fixed 120 s pickup) give it a 120 s
// timeout on the way back, after which it is gone from the table. The
// tables are testdata/hw/*iperf3* (README.md: the connections of the
// recorded iperf3 runs of ovs/, laid out as the kernel prints them).

// The UDP flow: its two streams are [HW_OFFLOAD], its TCP control
// connection left the flowtable. IperfFlows says which connection is the
// control one (the only TCP connection of a UDP test): the node is
// offloaded, and the reason names the control connection as expected
// software. Old code: software ("2 of 3 connections the run opened are
// [HW_OFFLOAD] (67%); 1 tracked in software").
func TestJudgeIdleControlConnectionUDP(t *testing.T) {
	for _, name := range []string{"hw/proc-iperf3-udp-p2-control-idle.txt", "hw/conntrack-L-iperf3-udp-p2-control-idle.txt"} {
		j, _, err := Judge(parseFile(t, name), IperfFlows(true, 2, recClient, recServer, 5201))
		if err != nil {
			t.Fatal(err)
		}
		if !j.Offloaded || j.Software != 0 {
			t.Errorf("%s: %+v", name, j)
		}
		for _, want := range []string{"iperf3's control connection", "sport 41626", "nf_flowtable_tcp_timeout", "expected"} {
			if !strings.Contains(j.Reason, want) {
				t.Errorf("%s: reason %q lacks %q", name, j.Reason, want)
			}
		}
	}
}

// The TCP flow with nf_conntrack_acct on: the one connection not in
// hardware carried 25 packets in all, iperf3's control exchange, no
// measured traffic. Old code: software.
func TestJudgeIdleControlConnectionByCounters(t *testing.T) {
	j, _, err := Judge(parseFile(t, "hw/proc-iperf3-tcp-p4-acct-control-idle.txt"), IperfFlows(false, 4, recClient, recServer, 5201))
	if err != nil {
		t.Fatal(err)
	}
	if !j.Offloaded || j.Software != 0 {
		t.Errorf("%+v", j)
	}
	for _, want := range []string{"sport 44142", "25 packets"} {
		if !strings.Contains(j.Reason, want) {
			t.Errorf("reason %q lacks %q", j.Reason, want)
		}
	}
}

// The TCP flow without counters and without iperf3's list of its streams:
// one of five connections is tracked in software, and the table alone
// cannot tell the idle control connection from a data stream. That is no
// ground for "software"; it is inconclusive, and says why. Old code:
// software.
func TestJudgeIdleControlConnectionUnidentified(t *testing.T) {
	j, _, err := Judge(parseFile(t, "hw/proc-iperf3-tcp-p4-control-idle.txt"), IperfFlows(false, 4, recClient, recServer, 5201))
	if err != nil {
		t.Fatal(err)
	}
	if j.Offloaded || j.Software != 0 || j.Flowtable != 0 {
		t.Errorf("%+v", j)
	}
	for _, want := range []string{"sport 44142", "control connection", "or a data stream"} {
		if !strings.Contains(j.Reason, want) {
			t.Errorf("reason %q lacks %q", j.Reason, want)
		}
	}
}

// recStreams are the four streams' client ports of ovs/iperf3-tcp-p4.json
// (start.connected; e2e/iperf3's TestConnected reads them from the file).
var recStreams = []uint16{44156, 44172, 44176, 44188}

// With iperf3's list of its streams (the harness always has it: the
// client's -J output) the control connection is known for sure, whatever
// offload.settle made of it: still [HW_OFFLOAD] (settle under 30 s), back
// in software (settle of 30 s or more), or gone (more than 150 s on a 5.15
// kernel). Each of the three is offloaded; the reason names what became
// of the control connection. A data stream in software is still software,
// and a live connection neither a stream nor the control one is extra.
func TestJudgeIdleControlConnectionEverySettle(t *testing.T) {
	idle := string(read(t, "hw/proc-iperf3-tcp-p4-control-idle.txt"))
	inHW := strings.Replace(idle, "tcp      6 431941 ESTABLISHED src=198.18.212.1 dst=198.18.212.2 sport=44142 dport=5201 src=198.18.212.2 dst=198.18.212.1 sport=5201 dport=44142 [ASSURED] mark=0 zone=0 use=2",
		"tcp      6 src=198.18.212.1 dst=198.18.212.2 sport=44142 dport=5201 src=198.18.212.2 dst=198.18.212.1 sport=5201 dport=44142 [HW_OFFLOAD] mark=0 zone=0 use=3", 1)
	if inHW == idle {
		t.Fatal("the control connection's line was not found")
	}
	streamSW := strings.Replace(inHW, "tcp      6 src=198.18.212.1 dst=198.18.212.2 sport=44172 dport=5201 src=198.18.212.2 dst=198.18.212.1 sport=5201 dport=44172 [HW_OFFLOAD] mark=0 zone=0 use=3",
		"tcp      6 431999 ESTABLISHED src=198.18.212.1 dst=198.18.212.2 sport=44172 dport=5201 src=198.18.212.2 dst=198.18.212.1 sport=5201 dport=44172 [ASSURED] mark=0 zone=0 use=2", 1)
	stranger := idle + "ipv4     2 tcp      6 431990 ESTABLISHED src=198.18.212.1 dst=198.18.212.2 sport=45000 dport=5201 src=198.18.212.2 dst=198.18.212.1 sport=5201 dport=45000 [ASSURED] mark=0 zone=0 use=2\n"
	flows := IperfStreams(false, recClient, recServer, 5201, recStreams)
	for _, c := range []struct {
		name      string
		table     string
		offloaded bool
		software  int
		reasons   []string
	}{
		{"settle < 30 s: control in hardware", inHW, true, 0, []string{"5 of 5 connections the run opened are [HW_OFFLOAD]"}},
		{"settle >= 30 s: control back in software", idle, true, 0, []string{"4 of 5", "iperf3's control connection (sport 44142: not among the data streams' ports iperf3 reported) tracked in software, as expected"}},
		{"settle > 150 s on 5.15: control gone", string(read(t, "hw/proc-iperf3-tcp-p4-control-gone.txt")), true, 0, []string{"4 of 5", "iperf3's control connection to port 5201 is not in the table, as expected"}},
		{"a stream in software", streamSW, false, 1, []string{"1 tracked in software"}},
		{"a live connection of no stream beside the control one", stranger, false, 0, []string{"more than it opened"}},
	} {
		es, err := Parse([]byte(c.table))
		if err != nil {
			t.Fatal(err)
		}
		j, conns, err := Judge(es, flows)
		if err != nil {
			t.Fatal(err)
		}
		if j.Offloaded != c.offloaded || j.Software != c.software {
			t.Errorf("%s: %+v", c.name, j)
		}
		for _, want := range c.reasons {
			if !strings.Contains(j.Reason, want) {
				t.Errorf("%s: reason %q lacks %q", c.name, j.Reason, want)
			}
		}
		for _, cn := range conns {
			if want := RoleData; cn.ClientPort == 44142 || cn.ClientPort == 45000 {
				if cn.Role != RoleControl {
					t.Errorf("%s: sport %d has role %q, want control", c.name, cn.ClientPort, cn.Role)
				}
			} else if cn.Role != want {
				t.Errorf("%s: sport %d has role %q, want %q", c.name, cn.ClientPort, cn.Role, want)
			}
		}
	}
	// Without the streams' ports the control connection gone is one
	// connection missing the table cannot place: inconclusive, as before.
	j, _, _ := Judge(parseFile(t, "hw/proc-iperf3-tcp-p4-control-gone.txt"), IperfFlows(false, 4, recClient, recServer, 5201))
	if j.Offloaded || j.Missing != 1 || !strings.Contains(j.Reason, "one may be iperf3's idle control connection") {
		t.Errorf("gone, unidentified: %+v", j)
	}
}

// Bad flows are refused, naming them.
func TestJudgeRefusesControlThatDoesNotFit(t *testing.T) {
	for _, f := range []Flow{
		{Proto: "tcp", Client: recClient, Server: recServer, ServerPort: 5201, Opened: 2, Control: 3},
		{Proto: "tcp", Client: recClient, Server: recServer, ServerPort: 5201, Opened: 2, Control: 1, DataPorts: []uint16{1, 2}},
	} {
		if _, _, err := Judge(nil, []Flow{f}); err == nil || !strings.Contains(err.Error(), "do not fit") {
			t.Errorf("%+v: %v", f, err)
		}
	}
}
