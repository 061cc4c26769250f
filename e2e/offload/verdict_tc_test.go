package offload

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Verdict rules of the TC check that a release decision rests on. Each test
// names the rule it guards; the inputs are the files of testdata/hw (see
// testdata/README.md for what each derived file changed).

// thirdMAC is a guest MAC that appears in none of the rules.
const thirdMAC = "02:00:c6:12:d2:0c"

// tcText parses a derived variant of a testdata file.
func tcText(t *testing.T, s string) TCDump {
	t.Helper()
	d, err := ParseTCText([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type tcCase struct {
	name   string
	obs    []TCObservation
	macs   []string
	want   results.Verdict
	reason []string // every one must be in the reason
}

func runTCCases(t *testing.T, cases []tcCase) {
	t.Helper()
	for _, c := range cases {
		v, why := JudgeTC(c.obs, c.macs)
		expectVerdict(t, c.name, v, why, c.want, c.reason...)
	}
}

func one(dev string, samples ...TCDump) []TCObservation {
	return []TCObservation{{Device: dev, Samples: samples}}
}

// A rule is the pair's only when both its MACs are the guests' (a decap rule
// may match the inner destination alone); anything else is unrelated.
func TestJudgeTCPairNeedsBothMACs(t *testing.T) {
	enc1, enc2 := mustTC(t, "hw/tc-mlx5-vf-rep-encap.txt"), mustTC(t, "hw/tc-mlx5-vf-rep-encap-sample2.txt")
	dec1, dec2 := mustTC(t, "hw/tc-mlx5-vxlan-decap.txt"), mustTC(t, "hw/tc-mlx5-vxlan-decap-sample2.txt")
	encDst1, encDst2 := mustTC(t, "hw/tc-mlx5-vf-rep-encap-dstonly.txt"), mustTC(t, "hw/tc-mlx5-vf-rep-encap-dstonly-sample2.txt")
	decDst1, decDst2 := mustTC(t, "hw/tc-mlx5-vxlan-decap-dstonly.txt"), mustTC(t, "hw/tc-mlx5-vxlan-decap-dstonly-sample2.txt")
	// Derived from the decap rule: src_mac equal to dst_mac (a guest talking to itself).
	self := func(name string) TCDump {
		return tcText(t, strings.Replace(string(readTestdata(t, name)), "src_mac "+mlxMACRemote, "src_mac "+mlxMACLocal, 1))
	}
	runTCCases(t, []tcCase{
		// The encap rule goes from ca:2e:.. (not a guest here) to guest A
		// 0a:40:..: in hardware and growing, but not the pair's traffic.
		{"third MAC to guest A on the representor", one("enp8s0f0_1", enc1, enc2), []string{mlxMACRemote, thirdMAC}, results.VerdictSoftware,
			[]string{"no rule of the guest pair; 1 unrelated rule (1 flower)"}},
		{"third MAC to guest A on the VXLAN device", one("vxlan_sys_4789", dec1, dec2), []string{mlxMACLocal, thirdMAC}, results.VerdictSoftware,
			[]string{"no rule of the guest pair"}},
		{"non-decap rule with only dst_mac", one("enp8s0f0_1", encDst1, encDst2), []string{mlxMACLocal, mlxMACRemote}, results.VerdictSoftware,
			[]string{"no rule of the guest pair; 1 unrelated rule (1 flower)"}},
		{"src_mac equal to dst_mac", one("vxlan_sys_4789", self("hw/tc-mlx5-vxlan-decap.txt"), self("hw/tc-mlx5-vxlan-decap-sample2.txt")), []string{mlxMACLocal, mlxMACRemote}, results.VerdictSoftware,
			[]string{"no rule of the guest pair"}},
		// A decap rule matched by its inner destination alone could carry a
		// third host's traffic to the guest: alone it cannot prove the pair,
		// beside a pair rule with both MACs in hardware it counts.
		{"decap rule by inner destination only, alone", one("vxlan_sys_4789", decDst1, decDst2), []string{mlxMACLocal, thirdMAC}, results.VerdictInconclusive,
			[]string{"no rule with both guests' MACs", "by inner destination only", "hardware packets +21665"}},
		{"decap rule by inner destination only, beside a pair rule", []TCObservation{
			{Device: "enp8s0f0_1", Samples: []TCDump{enc1, enc2}}, {Device: "vxlan_sys_4789", Samples: []TCDump{decDst1, decDst2}},
		}, []string{mlxMACLocal, mlxMACRemote}, results.VerdictOffloaded,
			[]string{"enp8s0f0_1: direction ca:2e:a7:3f:f5:0f -> 0a:40:bd:30:89:99: offloaded", "by inner destination only"}},
		{"decap rule to a MAC that is no guest", one("vxlan_sys_4789", decDst1, decDst2), []string{mlxMACRemote, thirdMAC}, results.VerdictSoftware,
			[]string{"no rule of the guest pair"}},
		{"both MACs of the pair", one("vxlan_sys_4789", dec1, dec2), []string{mlxMACLocal, mlxMACRemote}, results.VerdictOffloaded,
			[]string{"every stage in hardware", "hardware packets +21665"}},
	})
}

// One sample proves nothing unless the rule's own last use falls inside
// the window.
func TestJudgeTCOneSampleNeedsRecentUse(t *testing.T) {
	dec := string(readTestdata(t, "hw/tc-mlx5-vxlan-decap.txt"))
	dec1, j1 := mustTC(t, "hw/tc-mlx5-vxlan-decap.txt"), mustTC(t, "hw/tc-mlx5-vxlan-decap.json")
	enc1 := mustTC(t, "hw/tc-mlx5-vf-rep-encap.txt")
	// Derived: the mirred action last used 30 s ago (a rule that carried
	// traffic earlier, not during the window).
	stale := tcText(t, strings.Replace(dec, "installed 434 sec used 0 sec", "installed 434 sec used 30 sec", 1))
	// Derived: some of the rule's packets went through software.
	swHit := tcText(t, strings.Replace(strings.Replace(dec, "Sent software 0 bytes 0 pkt", "Sent software 1200 bytes 10 pkt", 1),
		"Sent 129936 bytes 1082 pkt", "Sent 131136 bytes 1092 pkt", 1))
	// Derived: no time line under the actions (tc without -s timing).
	noTime := tcText(t, strings.NewReplacer(" installed 434 sec used 434 sec", "", " installed 434 sec used 0 sec", "").Replace(dec))
	macs := []string{mlxMACLocal, mlxMACRemote}
	win := func(d time.Duration, s TCDump) []TCObservation {
		return []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{s}, Window: d}}
	}
	runTCCases(t, []tcCase{
		{"one sample, no window", one("vxlan_sys_4789", dec1), macs, results.VerdictInconclusive, []string{"one sample"}},
		{"one sample, used 0 sec, window 4s", win(4*time.Second, dec1), macs, results.VerdictOffloaded, []string{"hardware packets +1082", "used inside the window 4s"}},
		{"one sample (JSON), last_used 0, window 4s", win(4*time.Second, j1), macs, results.VerdictOffloaded, []string{"hardware packets +1082", "used inside the window 4s"}},
		{"encap rule, used 0 sec, window 4s", []TCObservation{{Device: "enp8s0f0_1", Samples: []TCDump{enc1}, Window: 4 * time.Second}}, macs, results.VerdictOffloaded, []string{"hardware packets +4028"}},
		{"used 0 sec means up to 1 s: window 1s", win(time.Second, dec1), macs, results.VerdictOffloaded, nil},
		{"used 0 sec means up to 1 s: window 900ms", win(900*time.Millisecond, dec1), macs, results.VerdictInconclusive, []string{"one sample"}},
		{"one sample, used 30 sec, window 4s", win(4*time.Second, stale), macs, results.VerdictInconclusive, []string{"last used 30 s ago", "one sample"}},
		{"one sample, software packets, window 4s", win(4*time.Second, swHit), macs, results.VerdictInconclusive, []string{"software"}},
		{"one sample, no last-use time, window 4s", win(4*time.Second, noTime), macs, results.VerdictInconclusive, []string{"one sample"}},
		// Stale counters: identical samples never prove offload, whatever the window.
		{"two identical samples", []TCObservation{{Device: "vxlan_sys_4789", Samples: []TCDump{dec1, dec1}, Window: time.Hour}}, macs, results.VerdictInconclusive, []string{"did not grow"}},
	})
}

func TestParseTCLastUsed(t *testing.T) {
	for _, name := range []string{"hw/tc-mlx5-vxlan-decap.txt", "hw/tc-mlx5-vxlan-decap.json"} {
		d := mustTC(t, name)
		a := d.Filters[0].Actions
		if !a[0].HasLastUsed || a[0].LastUsed != 434 || !a[1].HasLastUsed || a[1].LastUsed != 0 {
			t.Errorf("%s: last used: %+v", name, a)
		}
		if sec, ok := d.Filters[0].lastUsed(); !ok || sec != 0 {
			t.Errorf("%s: rule last used %d %v, want 0 true (the most recent action)", name, sec, ok)
		}
	}
	// iproute2 since 5.8 adds "firstused" after "used"; an action without a
	// time line has no last use.
	d := tcText(t, "filter protocol ip pref 4 flower chain 0 handle 0x1\n  in_hw\n  action order 1: gact drop\n   index 1 ref 1 bind 1 installed 444 sec used 3 sec firstused 440 sec\n  action order 2: gact pass\n   index 2 ref 1 bind 1\n   used_hw_stats delayed\n")
	a := d.Filters[0].Actions
	if !a[0].HasLastUsed || a[0].LastUsed != 3 || a[1].HasLastUsed {
		t.Errorf("text with firstused: %+v", a)
	}
}

// A guest's multicast/broadcast rule in software is exception traffic and
// must not spoil an offloaded unicast pair.
func TestJudgeTCMulticastIsExceptionTraffic(t *testing.T) {
	m1, m2 := mustTC(t, "hw/tc-mlx5-vf-rep-encap-mdns.txt"), mustTC(t, "hw/tc-mlx5-vf-rep-encap-mdns-sample2.txt")
	bcast := func(name string) TCDump {
		return tcText(t, strings.Replace(string(readTestdata(t, name)), "dst_mac 01:00:5e:00:00:fb", "dst_mac ff:ff:ff:ff:ff:ff", 1))
	}
	macs := []string{mlxMACLocal, mlxMACRemote}
	runTCCases(t, []tcCase{
		{"mDNS not_in_hw next to the offloaded pair", one("enp8s0f0_1", m1, m2), macs, results.VerdictOffloaded,
			[]string{"hardware packets +3135", "exception traffic (multicast/broadcast), not judged: ", "dst_mac 01:00:5e:00:00:fb"}},
		{"broadcast not_in_hw next to the offloaded pair", one("enp8s0f0_1", bcast("hw/tc-mlx5-vf-rep-encap-mdns.txt"), bcast("hw/tc-mlx5-vf-rep-encap-mdns-sample2.txt")), macs, results.VerdictOffloaded,
			[]string{"exception traffic (multicast/broadcast), not judged: ", "dst_mac ff:ff:ff:ff:ff:ff"}},
		{"mDNS alone is not the pair", one("enp8s0f0_1", m1, m2), []string{mlxMACLocal, thirdMAC}, results.VerdictSoftware,
			[]string{"no rule of the guest pair", "exception traffic (multicast/broadcast), not judged: "}},
	})
}

// Every filter that is not the pair's is counted by kind, u32 included, and
// a rule in hardware that is not the pair's is never called software.
func TestJudgeTCUnrelatedRulesCounted(t *testing.T) {
	u32 := mustTC(t, "hw/tc-u32-calico.txt")
	bnxt := mustTC(t, "hw/tc-bnxt-ct-helper.txt")
	wago := mustTC(t, "hw/tc-wago-flower-in-hw.json")
	runTCCases(t, []tcCase{
		{"flower, bpf and u32", one("vxlan.calico", u32, u32), []string{recMAC1, recMAC2}, results.VerdictSoftware,
			[]string{"no rule of the guest pair; 3 unrelated rules (1 bpf, 1 flower, 1 u32)"}},
		{"in-hardware rule without MAC keys, any MAC", one("eth1", bnxt, bnxt), nil, results.VerdictSoftware,
			[]string{"no rule of the guest pair; 1 unrelated rule (1 flower)"}},
		{"masked and broadcast dst only", one("ethX", wago, wago), nil, results.VerdictSoftware,
			[]string{"no rule of the guest pair; 3 unrelated rules (2 flower, 1 matchall)"}},
	})
	for _, c := range []struct {
		name string
		d    TCDump
	}{{"bnxt", bnxt}, {"u32", u32}} {
		_, why := JudgeTC(one("d", c.d, c.d), nil)
		if strings.Contains(why, "none matches") {
			t.Errorf("%s: self-contradicting reason %q", c.name, why)
		}
	}
}

func TestParseTCU32(t *testing.T) {
	for _, name := range []string{"hw/tc-u32-calico.txt", "hw/tc-u32-calico.json"} {
		d := mustTC(t, name)
		var u32 []TCFilter
		for _, f := range d.Filters {
			if f.Kind == "u32" {
				u32 = append(u32, f)
			}
		}
		// The head line and the hash table "fh 800: ht divisor 1" are not rules.
		if len(u32) != 1 || u32[0].Handle != "800::800" || !u32[0].NotInHW || u32[0].Pref != 49153 || len(u32[0].Actions) != 1 {
			t.Errorf("%s: u32 filters %+v", name, u32)
		}
	}
	// The line as `tc filter show dev DEV` prints it (with the parent).
	d := tcText(t, "filter parent ffff: protocol all pref 49152 u32 chain 0 \nfilter parent ffff: protocol all pref 49152 u32 chain 0 fh 800: ht divisor 1 \nfilter parent ffff: protocol all pref 49152 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 flowid 1:1 not_in_hw \n  match 00000000/00000000 at 0\n")
	if len(d.Filters) != 1 || d.Filters[0].Handle != "800::800" || d.Filters[0].Kind != "u32" || !d.Filters[0].NotInHW {
		t.Errorf("u32 with parent: %+v", d.Filters)
	}
}

// Growth is judged on packets: TC offload byte counters leave out the
// Ethernet header, so bytes are not comparable and never count.
func TestJudgeTCBytesAreNotGrowth(t *testing.T) {
	// Derived from sample 2: bytes advanced as there, packets left at sample 1's 1082.
	s := string(readTestdata(t, "hw/tc-mlx5-vxlan-decap-sample2.txt"))
	s = strings.NewReplacer("Sent 2729656 bytes 22747 pkt", "Sent 2729656 bytes 1082 pkt", "Sent hardware 2729656 bytes 22747 pkt", "Sent hardware 2729656 bytes 1082 pkt").Replace(s)
	runTCCases(t, []tcCase{
		{"hardware bytes grow, packets flat", one("vxlan_sys_4789", mustTC(t, "hw/tc-mlx5-vxlan-decap.txt"), tcText(t, s)), []string{mlxMACLocal, mlxMACRemote}, results.VerdictInconclusive, []string{"did not grow"}},
	})
}

func TestCheckTCDpctlNeedTwoSamples(t *testing.T) {
	hv := &fakeRunner{results: map[string][]remote.Result{}}
	for _, n := range []int{-1, 0, 1} {
		if _, err := CheckTC(context.Background(), hv, TCInput{Devices: []string{"rep0"}, MACs: []string{recMAC1, recMAC2}, Samples: n}); err == nil || !strings.Contains(err.Error(), "at least two samples") {
			t.Errorf("tc, %d samples: %v", n, err)
		}
		if _, err := CheckDpctl(context.Background(), hv, DpctlInput{MACs: []string{recMAC1, recMAC2}, Samples: n}); err == nil || !strings.Contains(err.Error(), "at least two samples") {
			t.Errorf("dpctl, %d samples: %v", n, err)
		}
	}
	if len(hv.calls) != 0 {
		t.Errorf("commands ran despite bad input: %v", hv.calls)
	}
}

// The same dump twice is never growth, even when it holds two rules with
// the same identity (here the decap rule printed twice with different
// counters): rules pair up by order of appearance, not by a map that keeps
// only one of them.
func TestJudgeTCIdenticalSamplesWithDuplicateRules(t *testing.T) {
	d := tcText(t, string(readTestdata(t, "hw/tc-mlx5-vxlan-decap-sample2.txt"))+string(readTestdata(t, "hw/tc-mlx5-vxlan-decap.txt")))
	if len(d.Filters) != 2 {
		t.Fatalf("got %d filters, want 2", len(d.Filters))
	}
	runTCCases(t, []tcCase{
		{"duplicate rules, same dump twice", one("vxlan_sys_4789", d, d), []string{mlxMACLocal, mlxMACRemote}, results.VerdictInconclusive, []string{"did not grow"}},
	})
}
