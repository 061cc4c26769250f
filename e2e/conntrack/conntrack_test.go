package conntrack

import (
	"net/netip"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseFile(t *testing.T, name string) []Entry {
	t.Helper()
	es, err := Parse(read(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return es
}

var (
	mlxClient = netip.MustParseAddr("1.1.1.17")
	mlxServer = netip.MustParseAddr("1.1.1.16")
)

// Both listings of the same two offloaded connections (sources in
// testdata/README.md) read the same: no timeout, no state, [HW_OFFLOAD].
func TestParseHardwareOffloadBothListings(t *testing.T) {
	for _, name := range []string{"hw/proc-hw-offload-mlx5-2020.txt", "hw/conntrack-L-hw-offload-mlx5-2020.txt"} {
		es := parseFile(t, name)
		if len(es) != 2 {
			t.Fatalf("%s: %d entries, want 2 (the summary line skipped)", name, len(es))
		}
		e := es[0]
		if e.Proto != "tcp" || e.ProtoNum != 6 || e.Timeout != -1 || e.State != "" || e.Offload != OffloadHardware {
			t.Errorf("%s: %+v", name, e)
		}
		if e.Orig.Src != mlxClient || e.Orig.Dst != mlxServer || e.Orig.SPort != 56408 || e.Orig.DPort != 5001 ||
			e.Reply.Src != mlxServer || e.Reply.DPort != 56408 {
			t.Errorf("%s: tuples %+v / %+v", name, e.Orig, e.Reply)
		}
	}
	if es := parseFile(t, "hw/proc-hw-offload-mlx5-2020.txt"); es[0].Family != "ipv4" || es[1].Line != 2 {
		t.Errorf("family or line: %+v", es)
	}
}

func TestParseSoftwareShapes(t *testing.T) {
	es := parseFile(t, "sw/conntrack-L-established.txt")
	if len(es) != 3 || es[0].Timeout != 431981 || es[0].State != "ESTABLISHED" || !es[0].HasFlag("ASSURED") || es[0].Offload != OffloadNone {
		t.Errorf("conntrack -L software: %+v", es)
	}
	if es[2].State != "CLOSE_WAIT" {
		t.Errorf("third state %q", es[2].State)
	}
	ft := parseFile(t, "sw/proc-offload-flowtable-2018.txt")
	if len(ft) != 1 || ft[0].Offload != OffloadFlowtable || ft[0].Reply.Dst != netip.MustParseAddr("192.168.2.195") {
		t.Errorf("flowtable entry: %+v", ft)
	}
	old := parseFile(t, "sw/proc-udp-assured-centos6.txt")
	if len(old) != 1 || old[0].Proto != "udp" || old[0].Timeout != 171 || old[0].State != "" || old[0].Zone != 0 || old[0].Offload != OffloadNone {
		t.Errorf("2.6.32 line: %+v", old)
	}
}

// Lines that are not entries are named, all at once; ICMP, IPv6 and
// counters are read.
func TestParseShapesAndErrors(t *testing.T) {
	good := "ipv4     2 icmp     1 29 src=198.18.10.10 dst=198.18.10.11 type=8 code=0 id=4321 packets=1 bytes=84 src=198.18.10.11 dst=198.18.10.10 type=0 code=0 id=4321 packets=1 bytes=84 mark=0 zone=3 use=2\n" +
		"ipv6     10 tcp      6 src=fd00::10 dst=fd00::11 sport=40000 dport=5201 packets=5 bytes=500 src=fd00::11 dst=fd00::10 sport=5201 dport=40000 packets=6 bytes=6000 [HW_OFFLOAD] mark=0 zone=3 use=2\n"
	es, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if es[0].Orig.ICMPType != 8 || es[0].Reply.ICMPType != 0 || es[0].Orig.ICMPID != 4321 || es[0].Zone != 3 || es[0].Orig.Packets != 1 {
		t.Errorf("icmp: %+v", es[0])
	}
	if es[1].Family != "ipv6" || es[1].Orig.Dst != netip.MustParseAddr("fd00::11") || es[1].Reply.Bytes != 6000 || es[1].Offload != OffloadHardware {
		t.Errorf("ipv6: %+v", es[1])
	}
	bad := "tcp 6 src=1.1.1.1 dst=1.1.1.2 sport=1 dport=2 [HW_OFFLOAD]\n" + // one tuple
		"[NEW] tcp 6 120 SYN_SENT src=1.1.1.1 dst=1.1.1.2 sport=1 dport=2 src=1.1.1.2 dst=1.1.1.1 sport=2 dport=1\n" + // conntrack -E
		"tcp 6 src=1.1.1.x dst=1.1.1.2 sport=1 dport=2 src=1.1.1.2 dst=1.1.1.1 sport=2 dport=1\n" +
		"tcp 6 src=1.1.1.1 dst=1.1.1.2 sport=70000 dport=2 src=1.1.1.2 dst=1.1.1.1 sport=2 dport=1\n" +
		good
	es, err = Parse([]byte(bad))
	if err == nil || len(es) != 2 {
		t.Fatalf("want the 4 bad lines named and the 2 good read, got %d entries, %v", len(es), err)
	}
	for _, want := range []string{"line 1: want an original and a reply tuple, got 1", `line 2: want a protocol name, got "[NEW]"`, `line 3: src "1.1.1.x"`, `line 4: sport "70000": beyond 65535`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// The judge: hardware only when every connection opened is [HW_OFFLOAD];
// [OFFLOAD] (software flowtable) never counts; missing, extra and software
// connections say how many; ICMP is refused as proof.
func TestJudge(t *testing.T) {
	hw := parseFile(t, "hw/proc-hw-offload-mlx5-2020.txt")
	flow := func(opened int) []Flow {
		return []Flow{{Proto: "tcp", Client: mlxClient, Server: mlxServer, ServerPort: 5001, Opened: opened}}
	}
	j, conns, err := Judge(hw, flow(2))
	if err != nil || !j.Offloaded || j.Hardware != 2 || j.Share != 1 || len(conns) != 2 || conns[0].ClientPort != 56404 {
		t.Fatalf("both offloaded: %+v %+v %v", j, conns, err)
	}
	if j.Reason != "2 of 2 connections the run opened are [HW_OFFLOAD] (100%)" {
		t.Errorf("reason %q", j.Reason)
	}

	// A connection the table lacks: not offloaded, says how many.
	j, _, _ = Judge(hw, flow(3))
	if j.Offloaded || j.Share != 2.0/3 || !strings.Contains(j.Reason, "1 not in the table") {
		t.Errorf("one missing: %+v", j)
	}
	// The same lines with the software flowtable's flag: software.
	ft, _ := Parse([]byte(strings.ReplaceAll(string(read(t, "hw/proc-hw-offload-mlx5-2020.txt")), "[HW_OFFLOAD]", "[OFFLOAD]")))
	j, _, _ = Judge(ft, flow(2))
	if j.Offloaded || j.Flowtable != 2 || j.Hardware != 0 || !strings.Contains(j.Reason, "2 [OFFLOAD]: the kernel's software flowtable, not hardware") {
		t.Errorf("flowtable: %+v", j)
	}
	// One zone offloaded, the other zone's entry of the same connection
	// not: that connection is software.
	mixed := append(append([]Entry(nil), hw...), hw[0])
	mixed[2].Zone, mixed[2].Offload, mixed[2].Flags, mixed[2].State, mixed[2].Timeout = 5, OffloadNone, []string{"ASSURED"}, "ESTABLISHED", 431999
	j, conns, _ = Judge(mixed, flow(2))
	if j.Offloaded || j.Hardware != 1 || j.Software != 1 || len(conns[1].Entries) != 2 {
		t.Errorf("one zone in software: %+v %+v", j, conns)
	}
	// More live connections than opened: the count proves nothing.
	j, _, _ = Judge(hw, flow(1))
	if j.Offloaded || !strings.Contains(j.Reason, "more than it opened") {
		t.Errorf("extra: %+v", j)
	}
	// Nothing of the run in the table (another address): named as such.
	j, _, _ = Judge(hw, []Flow{{Proto: "tcp", Client: netip.MustParseAddr("198.18.10.10"), Server: mlxServer, ServerPort: 5001, Opened: 2}})
	if j.Offloaded || j.Found != 0 || !strings.Contains(j.Reason, "2 not in the table at all") {
		t.Errorf("absent: %+v", j)
	}
	// Software, with a closed connection beside the live ones.
	sw := parseFile(t, "sw/conntrack-L-established.txt")
	swc, sws := netip.MustParseAddr("172.20.36.14"), netip.MustParseAddr("172.31.2.45")
	j, _, _ = Judge(sw, []Flow{{Proto: "tcp", Client: swc, Server: sws, ServerPort: 17652, Opened: 2}, {Proto: "tcp", Client: swc, Server: sws, ServerPort: 5000, Opened: 1}})
	if j.Offloaded || j.Software != 2 || j.Stale != 1 || j.Found != 2 || !strings.Contains(j.Reason, "2 tracked in software; 1 not in the table; 1 closed entries not counted") {
		t.Errorf("software: %+v", j)
	}

	for _, bad := range [][]Flow{
		{{Proto: "icmp", Client: mlxClient, Server: mlxServer, Opened: 1}},
		{{Proto: "tcp", Client: mlxClient, Server: mlxServer, ServerPort: 5001}},
		append(flow(1), flow(2)...),
		nil,
	} {
		if _, _, err := Judge(hw, bad); err == nil {
			t.Errorf("flows %+v accepted", bad)
		}
	}
}

func TestIperfFlows(t *testing.T) {
	c, s := netip.MustParseAddr("198.18.10.10"), netip.MustParseAddr("198.18.10.11")
	tcp := IperfFlows(false, 15, c, s, 5201)
	udp := IperfFlows(true, 15, c, s, 5202)
	if len(tcp) != 1 || tcp[0].Opened != 16 || len(udp) != 2 || udp[0].Proto != "tcp" || udp[0].Opened != 1 || udp[1].Opened != 15 {
		t.Errorf("tcp %+v udp %+v", tcp, udp)
	}
}

func TestParseSize(t *testing.T) {
	s, err := ParseSize([]byte("262140\n262144\n"))
	if err != nil || s.Room() != 4 {
		t.Errorf("%+v %v", s, err)
	}
	if full, _ := ParseSize([]byte("262144\n262144\n")); full.Room() != 0 {
		t.Errorf("full table has room %d", full.Room())
	}
	for _, bad := range []string{"", "12", "a 12", "12 0", "-1 5", "1 2 3"} {
		if _, err := ParseSize([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
