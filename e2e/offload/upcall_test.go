package offload

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The recorded outputs of a private OVS 3.1 (testdata/scale/README.md) and
// one written from the format string for a kernel datapath that counts its
// offloaded flows.
func TestParseUpcallShow(t *testing.T) {
	for _, tc := range []struct {
		file string
		want UpcallDatapath
	}{
		{"scale/upcall-show-idle.txt", UpcallDatapath{Name: "netdev@ovs-netdev", Limit: 10000,
			DumpDuration: time.Millisecond, UFID: true, Revalidators: []UpcallRevalidator{{ID: 5}}}},
		{"scale/upcall-show-ramp.txt", UpcallDatapath{Name: "netdev@ovs-netdev", Current: 2000, Avg: 1999, Max: 2000, Limit: 35000,
			DumpDuration: 4 * time.Millisecond, UFID: true, Revalidators: []UpcallRevalidator{{ID: 5, Keys: 2000}}}},
		// other_config:flow-limit=200 with 2000 flows: the limit is 200 and the
		// count above it (new flows are checked against a count refreshed
		// every 100 ms, so a burst overshoots).
		{"scale/upcall-show-limit.txt", UpcallDatapath{Name: "netdev@ovs-netdev", Current: 812, Avg: 419, Max: 2000, Limit: 200,
			DumpDuration: 2 * time.Millisecond, UFID: true, Revalidators: []UpcallRevalidator{{ID: 5, Keys: 812}}}},
		{"scale/upcall-show-kernel-offload.txt", UpcallDatapath{Name: "system@ovs-system", Current: 1043, Avg: 998, Max: 1050, Limit: 200000,
			Offloaded: 1040, HasOffloaded: true, DumpDuration: 12 * time.Millisecond, UFID: true,
			Revalidators: []UpcallRevalidator{{4, 262}, {5, 259}, {6, 261}, {7, 261}}}},
	} {
		dps, err := ParseUpcallShow(string(readTestdata(t, tc.file)))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if len(dps) != 1 || !reflect.DeepEqual(dps[0], tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.file, dps, tc.want)
		}
	}
}

func TestUpcallAtLimitAndKeys(t *testing.T) {
	limit, _ := ParseUpcallShow(string(readTestdata(t, "scale/upcall-show-limit.txt")))
	ramp, _ := ParseUpcallShow(string(readTestdata(t, "scale/upcall-show-ramp.txt")))
	kern, _ := ParseUpcallShow(string(readTestdata(t, "scale/upcall-show-kernel-offload.txt")))
	if !limit[0].AtLimit() || ramp[0].AtLimit() {
		t.Errorf("AtLimit: limit file %v (want true), ramp file %v (want false)", limit[0].AtLimit(), ramp[0].AtLimit())
	}
	if k := kern[0].Keys(); k != 1043 {
		t.Errorf("Keys() = %d, want 262+259+261+261 = 1043", k)
	}
}

// Every sample of the recorded ramp parses, and the count it gives is the
// flow count beside it in timeline/counts.tsv, less what the ramp added
// between the two reads (upcall/show was read first; the ramp only adds
// flows; at 500 new flows a second the reads, ~0.1 s apart under load,
// saw at most 134 more: 200 is the bound).
func TestParseUpcallShowTimeline(t *testing.T) {
	rows := timelineRows(t)
	for i, r := range rows {
		name := "scale/timeline/upcall-show-" + twoDigits(i) + ".txt"
		dps, err := ParseUpcallShow(string(readTestdata(t, name)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := int(dps[0].Current); got > r.Flows || r.Flows-got > 200 {
			t.Errorf("%s: current %d, dpctl read %d flows just after", name, got, r.Flows)
		}
	}
}

func twoDigits(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func TestParseUpcallShowRefuses(t *testing.T) {
	ok := "netdev@ovs-netdev:\n  flows         : (current 1) (avg 1) (max 1) (limit 10000)\n  dump duration : 1ms\n  ufid enabled : true\n\n  5: (keys 1)\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no datapath"},
		{"no header", "  flows         : (current 1) (avg 1) (max 1) (limit 10000)\n", "line 1: \"  flows"},
		{"bad header", "ovs-netdev:\n", "is not \"<type>@<datapath>:\""},
		{"no flows line", strings.Replace(ok, "  flows         : (current 1) (avg 1) (max 1) (limit 10000)\n", "", 1), `no "flows" line`},
		{"no dump line", strings.Replace(ok, "  dump duration : 1ms\n", "", 1), `no "dump duration" line`},
		{"fields swapped", strings.Replace(ok, "(avg 1) (max 1)", "(max 1) (avg 1)", 1), "want (current <n>) (avg <n>) (max <n>) (limit <n>)"},
		{"negative", strings.Replace(ok, "(current 1)", "(current -1)", 1), `current "-1" is not a count`},
		{"trailing", strings.Replace(ok, "(limit 10000)", "(limit 10000) (x 1)", 1), "then nothing"},
		{"duration unit", strings.Replace(ok, "1ms", "1s", 1), `dump duration "1s" is not <milliseconds>ms`},
		{"ufid", strings.Replace(ok, "true", "yes", 1), `ufid enabled "yes"`},
		{"twice", ok[:strings.Index(ok, "\n\n")] + "\n  dump duration : 2ms\n", `"dump duration" given twice`},
		{"revalidator twice", ok + "  5: (keys 2)\n", "revalidator 5 listed twice"},
		{"unknown", ok + "  masks : 3\n", `unknown field "masks"`},
		{"offloaded", strings.Replace(ok, "  dump", "  offloaded flows : many\n  dump", 1), `offloaded flows "many" is not a count`},
	} {
		_, err := ParseUpcallShow(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
	}
}

// Two datapaths (a host with a kernel and a userspace bridge) are two
// blocks; every problem is named at once.
func TestParseUpcallShowTwoDatapaths(t *testing.T) {
	two := string(readTestdata(t, "scale/upcall-show-kernel-offload.txt")) + string(readTestdata(t, "scale/upcall-show-ramp.txt"))
	dps, err := ParseUpcallShow(two)
	if err != nil || len(dps) != 2 || dps[0].Name != "system@ovs-system" || dps[1].Name != "netdev@ovs-netdev" || dps[1].HasOffloaded {
		t.Fatalf("got %+v, %v", dps, err)
	}
	_, err = ParseUpcallShow("a@b:\n  flows : (current x)\n  bogus\n")
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), `no "ufid enabled" line`) {
		t.Errorf("want lines 2 and 3 and the missing ufid line named, got %v", err)
	}
}

func TestUpcallCommand(t *testing.T) {
	if got, want := UpcallCommand(5), "ovs-appctl --timeout=5 -t ovs-vswitchd upcall/show"; got != want {
		t.Errorf("UpcallCommand(5) = %q, want %q", got, want)
	}
}
