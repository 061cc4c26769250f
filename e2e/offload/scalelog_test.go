package offload

import (
	"strings"
	"testing"
	"time"
)

// The log of the private OVS 3.1 whose flow-limit was set to 200 under
// 2000 flows (testdata/scale/README.md): one emergency flush, five "dynamic
// limit" lines (the rest rate-limited), nothing else of the kinds.
func TestParseScaleLogRecorded(t *testing.T) {
	log, err := ParseScaleLog(string(readTestdata(t, "scale/ovs-vswitchd.log")))
	if err != nil {
		t.Fatal(err)
	}
	lim := log.Kind(LogFlowLimit)
	if lim.Count() != 5 {
		t.Fatalf("flow-limit: %d lines, want 5: %v", lim.Count(), lim.Lines())
	}
	for _, e := range lim.Events {
		if e.Value != 200 || e.Level != "WARN" || e.Module != "ofproto_dpif_upcall" || !strings.HasSuffix(e.Line, "dynamic limit of 200 flows.") {
			t.Errorf("flow-limit event %+v", e)
		}
	}
	if !lim.First().Before(lim.Last()) && !lim.First().Equal(lim.Last()) {
		t.Errorf("first %v after last %v", lim.First(), lim.Last())
	}
	kill := log.Kind(LogFlowLimitKill)
	if kill.Count() != 1 || kill.Events[0].Value != 2000 || kill.Events[0].Module != "ofproto_dpif_upcall" {
		t.Errorf("flow-limit-kill: %+v", kill)
	}
	if want := time.Date(2026, 12, 6, 4, 33, 6, 830e6, time.UTC); !kill.First().Equal(want) {
		t.Errorf("flow-limit-kill at %v, want %v", kill.First(), want)
	}
	if kill.Events[0].Time.After(lim.First()) {
		t.Errorf("the flush (%v) should come before the first refused flow (%v)", kill.Events[0].Time, lim.First())
	}
	for _, k := range []LogKind{LogLongDump, LogUkeyInstall, LogOffloadFailed, LogPutFailed} {
		if n := log.Kind(k).Count(); n != 0 {
			t.Errorf("%s: %d lines in the recorded log, want 0", k, n)
		}
	}
	if len(log.Kinds) != 2 || log.Kinds[0].Kind != LogFlowLimit || log.Kinds[1].Kind != LogFlowLimitKill {
		t.Errorf("kinds %v, want flow-limit then flow-limit-kill", log.Kinds)
	}
}

// The kinds this machine cannot produce, in the formats of OVS's source
// (testdata/scale/README.md names each format string's file and line).
func TestParseScaleLogSourceFormats(t *testing.T) {
	log, err := ParseScaleLog(string(readTestdata(t, "scale/ovs-vswitchd-source-formats.log")))
	if err != nil {
		t.Fatal(err)
	}
	long := log.Kind(LogLongDump)
	if long.Count() != 2 || long.Events[0].Value != 2450 || long.Events[0].Level != "INFO" || long.Events[1].Value != 3120 || long.Events[1].Level != "WARN" {
		t.Errorf("long-dump: %+v", long)
	}
	if d := long.Last().Sub(long.First()); d != 3100*time.Millisecond {
		t.Errorf("long-dump first to last %v, want 3.1s", d)
	}
	if k := log.Kind(LogUkeyInstall); k.Count() != 1 || k.Events[0].Module != "ofproto_dpif_upcall" {
		t.Errorf("ukey-install: %+v", k)
	}
	if k := log.Kind(LogOffloadFailed); k.Count() != 1 || k.Events[0].Detail != "Invalid argument: enp8s0f0_1" || k.Events[0].Level != "ERR" {
		t.Errorf("offload-failed: %+v", k)
	}
	if k := log.Kind(LogPutFailed); k.Count() != 1 || k.Events[0].Detail != "Invalid argument" || k.Events[0].Module != "dpif" {
		t.Errorf("put-failed: %+v", k)
	}
	if k := log.Kind(LogFlowLimit); k.Count() != 1 || k.Events[0].Value != 1000 {
		t.Errorf("flow-limit: %+v", k)
	}
	if got := log.Dropped["ofproto_dpif_upcall"]; got != 1520 {
		t.Errorf("dropped by rate limit: %v, want ofproto_dpif_upcall 1520", log.Dropped)
	}
	if log.Lines != 7 {
		t.Errorf("lines %d, want 7", log.Lines)
	}
}

func TestParseScaleLogRefuses(t *testing.T) {
	in := "2026-12-06 04:32:13|00059|ofproto_dpif_upcall|WARN|upcall: datapath reached the dynamic limit of 200 flows.\n" +
		"other text\n" +
		"2026-12-06T04:32:14Z|00060|ofproto_dpif_upcall|WARN|upcall: datapath reached the dynamic limit of 99999999999999999999999 flows.\n" +
		"2026-12-06T04:32:15+02:00|00061|ofproto_dpif_upcall|INFO|Spent an unreasonably long 3000ms dumping flows\n"
	_, err := ParseScaleLog(in)
	for _, want := range []string{
		`line 1: flow-limit: time "2026-12-06 04:32:13" is not OVS's`,
		`line 3: flow-limit: number "99999999999999999999999" does not fit`,
		`line 4: long-dump: time "2026-12-06T04:32:15+02:00"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	// Lines of other messages and formats are passed over, not refused.
	log, err := ParseScaleLog("2026-12-06T04:32:13Z|1|bridge|INFO|bridge o38-br: added interface\nnot a log line\n  continuation: of a message\n")
	if err != nil || len(log.Kinds) != 0 || log.Dropped != nil {
		t.Errorf("got %+v, %v", log, err)
	}
	// The console format (no milliseconds) is OVS's too.
	log, err = ParseScaleLog("2026-12-06T04:32:13Z|00001|ofproto_dpif_upcall(handler1)|WARN|upcall_cb failure: ukey installation fails")
	if err != nil || log.Kind(LogUkeyInstall).Count() != 1 {
		t.Errorf("console format: %+v, %v", log, err)
	}
}
