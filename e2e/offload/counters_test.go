package offload

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Recorded by testdata/record-counters.sh (iproute2 6.1.0): ip-link-* and
// ip-stats-cpuhit-* around a 20000-ping flood over a veth pair (offrec2-rep
// on the "hypervisor", eth1 in the "guest"), and around 2 idle seconds.

func recordedLinkStats(t *testing.T, name string) LinkStats {
	t.Helper()
	ls, err := ParseLinkStats(readTestdata(t, "sw/"+name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ls
}

// cpuHitJSON is a cpu_hit listing of a device whose driver keeps the
// counters. Not recorded (no such device here): iproute2 prints cpu_hit with
// the function that printed the recorded `ip -j stats show ... group link`
// object ("stats64" with rx/tx), under the same header as the recorded
// cpu_hit listing of the veth.
func cpuHitJSON(dev string, rx, tx int) []byte {
	return []byte(`[{"ifindex":9,"ifname":"` + dev + `","group":"offload","subgroup":"cpu_hit","stats64":{"rx":{"bytes":` +
		strconv.Itoa(rx*98) + `,"packets":` + strconv.Itoa(rx) + `,"errors":0,"dropped":0,"over_errors":0,"multicast":0},"tx":{"bytes":` +
		strconv.Itoa(tx*98) + `,"packets":` + strconv.Itoa(tx) + `,"errors":0,"dropped":0,"carrier_errors":0,"collisions":0}}}]` + "\n")
}

func TestLinkStatsCommands(t *testing.T) {
	if got := LinkStatsCommand("offrec2-rep"); got != "ip -s -j link show dev offrec2-rep" {
		t.Errorf("link: %s", got)
	}
	if got := CPUHitStatsCommand("offrec2-rep"); got != "ip -j stats show dev offrec2-rep group offload subgroup cpu_hit" {
		t.Errorf("cpu_hit: %s", got)
	}
	if got := LinkStatsCommand("a b;rm -rf /"); got != "ip -s -j link show dev 'a b;rm -rf /'" {
		t.Errorf("quoting: %s", got)
	}
	// The recorded commands are exactly these.
	for name, want := range map[string]string{
		"sw/ip-link-rep-before.json.cmd":         LinkStatsCommand("offrec2-rep"),
		"sw/ip-link-guest-before.json.cmd":       LinkStatsCommand("eth1"),
		"sw/ip-stats-cpuhit-rep-before.json.cmd": CPUHitStatsCommand("offrec2-rep"),
	} {
		if got := string(readTestdata(t, name)); got != want+"\nexit 0\n" {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestParseLinkStatsRecorded(t *testing.T) {
	after := recordedLinkStats(t, "ip-link-rep-after.json")
	want := LinkStats{Name: "offrec2-rep", RxPackets: 20003, TxPackets: 20003, RxBytes: 1960238, TxBytes: 1960238}
	if after != want {
		t.Errorf("rep after: %+v, want %+v", after, want)
	}
	if g := recordedLinkStats(t, "ip-link-guest-before.json"); g.Name != "eth1" || g.RxPackets != 3 || g.TxPackets != 3 {
		t.Errorf("guest before: %+v", g)
	}
	// The veth keeps no cpu_hit counters: listed without "stats64".
	_, err := ParseLinkStats(readTestdata(t, "sw/ip-stats-cpuhit-rep-before.json"))
	if !errors.Is(err, ErrNoCounters) || !strings.Contains(err.Error(), "offrec2-rep") {
		t.Errorf("veth cpu_hit: %v", err)
	}
	hit, err := ParseLinkStats(cpuHitJSON("enp8s0f0_1", 12, 7))
	if err != nil || hit != (LinkStats{Name: "enp8s0f0_1", RxPackets: 12, TxPackets: 7, RxBytes: 1176, TxBytes: 686}) {
		t.Errorf("cpu_hit with counters: %+v %v", hit, err)
	}
	// 32-bit "stats" when there is no "stats64".
	old := `[{"ifname":"eth0","stats":{"rx":{"bytes":10,"packets":1,"dropped":2},"tx":{"bytes":20,"packets":3}}}]`
	if ls, err := ParseLinkStats([]byte(old)); err != nil || ls != (LinkStats{Name: "eth0", RxPackets: 1, TxPackets: 3, RxBytes: 10, TxBytes: 20, RxDropped: 2}) {
		t.Errorf("stats fallback: %+v %v", ls, err)
	}
}

func TestParseLinkStatsErrors(t *testing.T) {
	rec := string(readTestdata(t, "sw/ip-link-rep-after.json"))
	noStats := rec[:strings.Index(rec, `,"stats64"`)] + "}]"
	for name, tc := range map[string]struct{ in, has string }{
		"empty":             {"", "empty output"},
		"stderr of nodev":   {string(readTestdata(t, "sw/ip-link-nodev.txt.stderr")), "not the JSON array"},
		"no device":         {"[]\n", "no device listed"},
		"two devices":       {"[" + strings.TrimSpace(rec)[1:len(strings.TrimSpace(rec))-1] + "," + strings.TrimSpace(rec)[1:], "2 devices listed"},
		"object":            {`{"ifname":"x"}`, "not the JSON array"},
		"no ifname":         {`[{"stats64":{"rx":{"bytes":1,"packets":1},"tx":{"bytes":1,"packets":1}}}]`, `no "ifname"`},
		"no -s":             {noStats, `device offrec2-rep has no "stats64" or "stats"`},
		"no tx":             {`[{"ifname":"x","stats64":{"rx":{"bytes":1,"packets":1}}}]`, `device x: stats64 has no "tx"`},
		"no rx packets":     {`[{"ifname":"x","stats64":{"rx":{"bytes":1},"tx":{"bytes":1,"packets":1}}}]`, `stats64.rx has no "packets"`},
		"no tx bytes":       {`[{"ifname":"x","stats64":{"rx":{"bytes":1,"packets":1},"tx":{"packets":1}}}]`, `stats64.tx has no "bytes"`},
		"negative":          {`[{"ifname":"x","stats64":{"rx":{"bytes":1,"packets":-1},"tx":{"bytes":1,"packets":1}}}]`, "packets"},
		"fraction":          {`[{"ifname":"x","stats64":{"rx":{"bytes":1,"packets":1.5},"tx":{"bytes":1,"packets":1}}}]`, "packets"},
		"trailing garbage":  {rec + "x", "not the JSON array"},
		"ifname not string": {`[{"ifname":7}]`, "ifname"},
	} {
		_, err := ParseLinkStats([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.has) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.has)
		}
	}
	if _, err := ParseLinkStats([]byte(noStats)); !errors.Is(err, ErrNoCounters) {
		t.Errorf("no -s: %v is not ErrNoCounters", err)
	}
}

// countersSetup answers the check's commands with the given outputs, two
// readings each (before, after); a nil cpu_hit pair uses the recorded veth
// listing without counters.
func countersSetup(t *testing.T, repLink, cpuHit, guestLink [2]remote.Result) (*fakeRunner, guestRunner, CountersInput) {
	t.Helper()
	if cpuHit[0].Stdout == nil && cpuHit[0].ExitCode == 0 {
		cpuHit = [2]remote.Result{ok(readTestdata(t, "sw/ip-stats-cpuhit-rep-before.json")), ok(readTestdata(t, "sw/ip-stats-cpuhit-rep-after.json"))}
	}
	hv := &fakeRunner{results: map[string][]remote.Result{
		LinkStatsCommand("offrec2-rep"):   repLink[:],
		CPUHitStatsCommand("offrec2-rep"): cpuHit[:],
	}}
	guest := guestRunner{&fakeRunner{results: map[string][]remote.Result{LinkStatsCommand("eth1"): guestLink[:]}}, "guest-a"}
	return hv, guest, CountersInput{Representor: "offrec2-rep", Guest: guest, GuestIface: "eth1", Window: time.Millisecond}
}

func recordedPair(t *testing.T, before, after string) [2]remote.Result {
	return [2]remote.Result{ok(readTestdata(t, "sw/"+before)), ok(readTestdata(t, "sw/"+after))}
}

func TestCheckCountersRecordedSoftwarePath(t *testing.T) {
	hv, guest, in := countersSetup(t,
		recordedPair(t, "ip-link-rep-before.json", "ip-link-rep-after.json"),
		[2]remote.Result{},
		recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json"))
	c, err := CheckCounters(context.Background(), hv, in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != results.CheckCounters || c.Verdict != results.VerdictSoftware ||
		!strings.Contains(c.Reason, "representor offrec2-rep moved 40000 packets on its link counters while the guest's interface eth1 of guest-a moved 40000") ||
		!strings.Contains(c.Reason, "it keeps no cpu_hit counters") {
		t.Errorf("got %s %q", c.Verdict, c.Reason)
	}
	var names []string
	for _, e := range c.Evidence {
		names = append(names, e.Name)
	}
	want := "counters-rep-offrec2-rep-before.json,counters-rep-offrec2-rep-cpuhit-before.json,counters-guest-eth1-before.json," +
		"counters-rep-offrec2-rep-after.json,counters-rep-offrec2-rep-cpuhit-after.json,counters-guest-eth1-after.json"
	if strings.Join(names, ",") != want {
		t.Errorf("evidence: %v", names)
	}
	if e := c.Evidence[2]; e.Target != "guest-a" || e.Cmd != "ip -s -j link show dev eth1" || len(e.Output) == 0 {
		t.Errorf("guest evidence: %+v", e)
	}
	if len(hv.calls) != 4 || len(guest.calls) != 2 {
		t.Errorf("calls: %v %v", hv.calls, guest.calls)
	}
}

func TestCheckCountersHardwareShape(t *testing.T) {
	// mlx5-like: the link counters (VF vport) grow with the flow, the
	// cpu_hit counters barely move.
	flatHit := [2]remote.Result{ok(cpuHitJSON("offrec2-rep", 3, 2)), ok(cpuHitJSON("offrec2-rep", 5, 4))}
	growingLink := recordedPair(t, "ip-link-rep-before.json", "ip-link-rep-after.json")
	growingGuest := recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json")
	hv, _, in := countersSetup(t, growingLink, flatHit, growingGuest)
	c, err := CheckCounters(context.Background(), hv, in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != results.VerdictOffloaded || !strings.Contains(c.Reason, "representor offrec2-rep moved 4 packets on its slow path (cpu_hit) while the guest's interface eth1 of guest-a moved 40000 and the representor's port (link counters) 40000") {
		t.Errorf("flat slow path: %s %q", c.Verdict, c.Reason)
	}
	// The same flat slow path on a representor whose port did not carry the
	// flow: the wrong representor, not offload.
	hv, _, in = countersSetup(t, recordedPair(t, "ip-link-rep-idle-before.json", "ip-link-rep-idle-after.json"), flatHit, growingGuest)
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "its link counters (the port it stands for) moved only 0 while eth1 of guest-a moved 40000") {
		t.Errorf("port did not move: %s %q %v", c.Verdict, c.Reason, err)
	}
	// A busy slow path is software even on a hardware netdev.
	busyHit := [2]remote.Result{ok(cpuHitJSON("offrec2-rep", 3, 2)), ok(cpuHitJSON("offrec2-rep", 20003, 20002))}
	hv, _, in = countersSetup(t, growingLink, busyHit, growingGuest)
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictSoftware || !strings.Contains(c.Reason, "moved 40000 packets on its cpu_hit (slow-path) counters") {
		t.Errorf("busy slow path: %s %q %v", c.Verdict, c.Reason, err)
	}
}

func TestCheckCountersQuietDevicesProveNothing(t *testing.T) {
	idleRep := recordedPair(t, "ip-link-rep-idle-before.json", "ip-link-rep-idle-after.json")
	idleGuest := recordedPair(t, "ip-link-guest-idle-before.json", "ip-link-guest-idle-after.json")
	growingGuest := recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json")
	// No flow in the window.
	hv, _, in := countersSetup(t, idleRep, [2]remote.Result{}, idleGuest)
	c, err := CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "the flow moved only 0 packets through eth1 of guest-a in the window (at least 10000 needed)") {
		t.Errorf("guest flat: %s %q %v", c.Verdict, c.Reason, err)
	}
	// A quiet veth while the guest moved 40000: the flow went elsewhere.
	hv, _, in = countersSetup(t, idleRep, [2]remote.Result{}, growingGuest)
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "keeps no cpu_hit counters (no hardware datapath) and its link counters moved only 0 packets while eth1 of guest-a moved 40000") {
		t.Errorf("quiet device without cpu_hit: %s %q %v", c.Verdict, c.Reason, err)
	}
}

func TestCheckCountersReset(t *testing.T) {
	// The guest's readings in reverse order: the counters went backwards.
	hv, _, in := countersSetup(t,
		recordedPair(t, "ip-link-rep-before.json", "ip-link-rep-after.json"), [2]remote.Result{},
		recordedPair(t, "ip-link-guest-after.json", "ip-link-guest-before.json"))
	c, err := CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "the counters of eth1 of guest-a went backwards (rx packets 20003 -> 3, tx packets 20003 -> 3)") {
		t.Errorf("guest reset: %s %q %v", c.Verdict, c.Reason, err)
	}
	hv, _, in = countersSetup(t,
		recordedPair(t, "ip-link-rep-after.json", "ip-link-rep-before.json"), [2]remote.Result{},
		recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json"))
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "link counters of representor offrec2-rep went backwards") {
		t.Errorf("representor reset: %s %q %v", c.Verdict, c.Reason, err)
	}
	hit := [2]remote.Result{ok(cpuHitJSON("offrec2-rep", 50, 50)), ok(cpuHitJSON("offrec2-rep", 1, 1))}
	hv, _, in = countersSetup(t, recordedPair(t, "ip-link-rep-before.json", "ip-link-rep-after.json"), hit,
		recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json"))
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "cpu_hit counters of representor offrec2-rep went backwards") {
		t.Errorf("cpu_hit reset: %s %q %v", c.Verdict, c.Reason, err)
	}
}

func TestCheckCountersToolProblems(t *testing.T) {
	growingRep := recordedPair(t, "ip-link-rep-before.json", "ip-link-rep-after.json")
	growingGuest := recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json")
	missing := remote.Result{ExitCode: 127, Stderr: readTestdata(t, "sw/ip-missing.txt.stderr")}
	// ip missing in the guest (recorded: /bin/sh with a PATH without ip).
	hv, _, in := countersSetup(t, growingRep, [2]remote.Result{}, [2]remote.Result{missing, missing})
	c, err := CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || c.Reason != "ip (iproute2) is not installed in the guest guest-a (exit 127: /bin/sh: 1: ip: not found)" {
		t.Errorf("ip missing in the guest: %s %q %v", c.Verdict, c.Reason, err)
	}
	// ip missing on the hypervisor: nothing else is asked.
	hv, guest, in := countersSetup(t, [2]remote.Result{missing, missing}, [2]remote.Result{}, growingGuest)
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "ip (iproute2) is not installed on the hypervisor fake-hv") || len(guest.calls) != 0 {
		t.Errorf("ip missing on the hypervisor: %s %q %v (guest calls %v)", c.Verdict, c.Reason, err, guest.calls)
	}
	// No such representor (recorded).
	nodev := remote.Result{ExitCode: 1, Stderr: readTestdata(t, "sw/ip-link-nodev.txt.stderr")}
	hv, _, in = countersSetup(t, [2]remote.Result{nodev, nodev}, [2]remote.Result{}, growingGuest)
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || c.Reason != `Device "offrec2-nosuch" does not exist on the hypervisor fake-hv` {
		t.Errorf("no such device: %s %q %v", c.Verdict, c.Reason, err)
	}
	// iproute2 older than 5.18 has no `ip stats`; its message, from ip/ip.c.
	old := remote.Result{ExitCode: 255, Stderr: []byte("Object \"stats\" is unknown, try \"ip help\".\n")}
	hv, _, in = countersSetup(t, growingRep, [2]remote.Result{old, old}, growingGuest)
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "has no `ip stats` (it needs 5.18 or later)") || !strings.Contains(c.Reason, "on mlx5 they count all of the VF's traffic") {
		t.Errorf("old iproute2: %s %q %v", c.Verdict, c.Reason, err)
	}
	// Output that is not a listing.
	hv, _, in = countersSetup(t, [2]remote.Result{ok([]byte("[]\n")), ok([]byte("[]\n"))}, [2]remote.Result{}, growingGuest)
	c, err = CheckCounters(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "cannot read `ip -s -j link show dev offrec2-rep` output on the hypervisor fake-hv: ip link statistics: no device listed") {
		t.Errorf("empty listing: %s %q %v", c.Verdict, c.Reason, err)
	}
}

func TestCheckCountersInputAndTransport(t *testing.T) {
	hv, guest, good := countersSetup(t,
		recordedPair(t, "ip-link-rep-before.json", "ip-link-rep-after.json"), [2]remote.Result{},
		recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json"))
	bad := func(f func(*CountersInput)) CountersInput { in := good; f(&in); return in }
	for name, tc := range map[string]struct {
		in  CountersInput
		has string
	}{
		"no representor":      {bad(func(in *CountersInput) { in.Representor = "" }), "no representor"},
		"no guest":            {bad(func(in *CountersInput) { in.Guest = nil }), "no guest runner"},
		"no guest interface":  {bad(func(in *CountersInput) { in.GuestIface = "" }), "no data interface of the guest guest-a"},
		"no window":           {bad(func(in *CountersInput) { in.Window = 0 }), "window must be > 0"},
		"min flow <= max rep": {bad(func(in *CountersInput) { in.MinFlowPackets = 500 }), "min flow packets (500) must exceed max representor packets (1000)"},
	} {
		if _, err := CheckCounters(context.Background(), hv, tc.in); err == nil || !strings.Contains(err.Error(), tc.has) {
			t.Errorf("%s: %v", name, err)
		}
	}
	lost := bad(func(in *CountersInput) {
		in.Guest = guestRunner{&fakeRunner{err: errors.New("ssh: connection lost")}, "guest-a"}
	})
	if _, err := CheckCounters(context.Background(), hv, lost); err == nil || !strings.Contains(err.Error(), "connection lost") {
		t.Errorf("guest transport failure: %v", err)
	}
	// Cancelled while waiting out the window.
	ctx, cancel := context.WithCancel(context.Background())
	slow := good
	slow.Window = time.Hour
	hv, guest, _ = countersSetup(t,
		recordedPair(t, "ip-link-rep-before.json", "ip-link-rep-after.json"), [2]remote.Result{},
		recordedPair(t, "ip-link-guest-before.json", "ip-link-guest-after.json"))
	slow.Guest = guest
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, err := CheckCounters(ctx, hv, slow); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestJudgeCountersThresholds(t *testing.T) {
	at := func(rx, tx uint64) LinkStats { return LinkStats{Name: "d", RxPackets: rx, TxPackets: tx} }
	// The representor's port tracks the guest's interface (its rx is the
	// guest's tx): flow/2 each way on both.
	hwFlow := func(slow, flow uint64) (RepCounters, RepCounters) {
		h0, h1 := at(0, 0), at(slow, 0)
		return RepCounters{Link: at(0, 0), CPUHit: &h0}, RepCounters{Link: at(flow-flow/2, flow/2), CPUHit: &h1}
	}
	hw := func(slow uint64) (RepCounters, RepCounters) { return hwFlow(slow, 40000) }
	in := CountersInput{Representor: "rep0", GuestIface: "eth1", GuestName: "g"}
	for _, tc := range []struct {
		name       string
		slow, flow uint64
		want       results.Verdict
	}{
		{"slow path just under the default allowance", 999, 40000, results.VerdictOffloaded},
		{"slow path at the default allowance", 1000, 40000, results.VerdictSoftware},
		{"flow just under the default minimum", 0, 9999, results.VerdictInconclusive},
		{"flow at the default minimum", 0, 10000, results.VerdictOffloaded},
	} {
		r0, r1 := hwFlow(tc.slow, tc.flow)
		v, why := JudgeCounters(r0, r1, at(0, 0), at(tc.flow/2, tc.flow-tc.flow/2), in)
		if v != tc.want {
			t.Errorf("%s: %s %q", tc.name, v, why)
		}
	}
	r0, r1 := hw(50)
	if v, why := JudgeCounters(r0, r1, at(0, 0), at(40000, 0), CountersInput{MaxRepPackets: 10, MinFlowPackets: 100}); v != results.VerdictSoftware || !strings.Contains(why, "fewer than 10 there") {
		t.Errorf("configured allowance: %s %q", v, why)
	}
	if v, _ := JudgeCounters(r0, r1, at(0, 0), at(40000, 0), CountersInput{MaxRepPackets: 100, MinFlowPackets: 100}); v != results.VerdictInconclusive {
		t.Errorf("min flow == max rep: %s", v)
	}
	// Counters near the top of uint64 do not wrap.
	top := at(1<<64-1, 1<<64-1)
	if v, _ := JudgeCounters(RepCounters{Link: at(0, 0)}, RepCounters{Link: top}, at(0, 0), top, in); v != results.VerdictSoftware {
		t.Errorf("saturated counters: %s", v)
	}
	// cpu_hit counters that appear between the readings.
	h := at(0, 0)
	if v, why := JudgeCounters(RepCounters{Link: at(0, 0)}, RepCounters{Link: at(0, 0), CPUHit: &h}, at(0, 0), at(40000, 0), in); v != results.VerdictInconclusive || !strings.Contains(why, "appeared or vanished") {
		t.Errorf("cpu_hit appeared: %s %q", v, why)
	}
}

// A busy slow path is software even in a window where the guest's own
// counters moved little: the host datapath's packets are counted, not
// inferred. Only "offloaded" (a silence) needs the big flow to mean anything.
func TestJudgeCountersBusySlowPathIsSoftwareWhateverTheFlowSize(t *testing.T) {
	rep0 := RepCounters{Link: LinkStats{Name: "rep", RxPackets: 100, TxPackets: 100}}
	rep1 := RepCounters{Link: LinkStats{Name: "rep", RxPackets: 2600, TxPackets: 2600}}
	g0 := LinkStats{Name: "eth1", RxPackets: 10, TxPackets: 10}
	g1 := LinkStats{Name: "eth1", RxPackets: 2510, TxPackets: 2510}
	v, why := JudgeCounters(rep0, rep1, g0, g1, CountersInput{Representor: "rep", GuestIface: "eth1"})
	if v != results.VerdictSoftware || !strings.Contains(why, "moved 5000 packets") || !strings.Contains(why, "moved 5000 (an offloaded port moves fewer than 1000 there") {
		t.Errorf("busy slow path with a 5000-packet flow: %s %q", v, why)
	}
	// the same small flow with a quiet representor proves nothing
	v, why = JudgeCounters(rep0, rep0, g0, g1, CountersInput{Representor: "rep", GuestIface: "eth1"})
	if v != results.VerdictInconclusive || !strings.Contains(why, "moved only 5000 packets") {
		t.Errorf("quiet representor, small flow: %s %q", v, why)
	}
}
