package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func readRepo(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The recorded OVS bond (envinfo/testdata/ovsbond) as the results' state:
// miimon 100 + downdelay 100 from the Port's other_config, carrier
// detection's 0; the failover's active member moved.
func TestBondStateFromOVSRecorded(t *testing.T) {
	for _, c := range []struct {
		mode       string
		monitor    int
		detect     string
		boundWords string
	}{
		{"active-backup-miimon", 100, "miimon", "miimon 100 ms + downdelay 100 ms"},
		{"active-backup-carrier", 0, "carrier", "carrier detection + downdelay 0 ms"},
	} {
		other, err := envinfo.ParseOVSMap(readRepo(t, "envinfo/testdata/ovsbond/"+c.mode+"-other-config.txt"))
		if err != nil {
			t.Fatal(err)
		}
		var st [2]*results.BondState
		for i, f := range []string{"before", "down"} {
			b, err := envinfo.ParseOVSBond(readRepo(t, "envinfo/testdata/ovsbond/"+c.mode+"-"+f+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			st[i] = BondStateFromOVS(b, other)
		}
		leg := strings.TrimSpace(string(readRepo(t, "envinfo/testdata/ovsbond/"+c.mode+"-leg.txt")))
		if st[0].MonitorMs != c.monitor || st[0].DetectMode != c.detect || st[0].Active != leg {
			t.Errorf("%s before: %+v", c.mode, st[0])
		}
		if _, w, ok := st[0].Bound(); !ok || w != c.boundWords {
			t.Errorf("%s bound %q %v", c.mode, w, ok)
		}
		if m, _ := st[1].Member(leg); m.Up || st[1].Active == leg || st[1].Active == "" {
			t.Errorf("%s after down: %+v", c.mode, st[1])
		}
	}
	b, _ := envinfo.ParseOVSBond(readRepo(t, "envinfo/testdata/ovsbond/balance-tcp-before.txt"))
	if st := BondStateFromOVS(b, nil); st.MonitorMs != -1 {
		t.Errorf("no other_config read: monitor %d, want -1 (unknown)", st.MonitorMs)
	}
}

func TestBondStateFromLinux(t *testing.T) {
	b, err := envinfo.ParseBonding(readRepo(t, "envinfo/testdata/proc-net-bonding-ab-failed-derived.txt"))
	if err != nil {
		t.Fatal(err)
	}
	st := BondStateFromLinux("bond0", b)
	if st.Source != "linux" || st.Mode != "active-backup" || st.Active != "ens1f1np1" || st.MonitorMs != 100 || st.DownDelayMs != 200 ||
		st.Line() != "active-backup, active ens1f1np1 (ens1f0np0 down, ens1f1np1 up; link failures 1/0)" {
		t.Errorf("%+v %s", st, st.Line())
	}
}

func outageRun(t *testing.T, name string) (iperf3.Result, iperf3.Outage) {
	t.Helper()
	r, err := iperf3.Parse(readRepo(t, "iperf3/testdata/outage/"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := iperf3.Outages(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, o
}

// The recorded cut placed against the actions' times: down at +2.080 s,
// up at +3.202 s (testdata/outage/v3.12-udp-20m-l1000-cut-1s.cmd).
func TestFillFailoverFlowRecorded(t *testing.T) {
	r, o := outageRun(t, "v3.12-udp-20m-l1000-cut-1s")
	fr := results.FailoverResult{DownAtSeconds: 2, RestoreAtSeconds: 3,
		Down: &results.FailoverAction{AtSeconds: 2.080}, Restore: &results.FailoverAction{AtSeconds: 3.202}}
	FillFailoverFlow(&fr, r, o)
	if fr.Outage == nil || fr.Outage.Lost != 2829 || fr.Outage.Spread || fr.Failback != nil || fr.LostBeforeDown != 0 {
		t.Fatalf("%+v %+v", fr.Outage, fr.Failback)
	}
	if fr.Outage.Ms < 1100 || fr.Outage.Ms > 1150 || fr.Flow.ResolutionMs < 0.39 || fr.Flow.ResolutionMs > 0.41 {
		t.Errorf("%+v %+v", fr.Outage, fr.Flow)
	}
	// The same flow with the down placed after the cut: the cut is loss
	// before the down, not the failover's outage.
	fr = results.FailoverResult{DownAtSeconds: 4, RestoreAtSeconds: 5}
	FillFailoverFlow(&fr, r, o)
	if fr.Outage != nil || fr.LostBeforeDown != 2829 {
		t.Errorf("a gap before the down: %+v, lost before %d", fr.Outage, fr.LostBeforeDown)
	}
	// Spread loss: the longest is no gap.
	r, o = outageRun(t, "v3.12-udp-20m-l1000-spread-2pct")
	fr = results.FailoverResult{DownAtSeconds: 1, RestoreAtSeconds: 2}
	FillFailoverFlow(&fr, r, o)
	if fr.Outage == nil || !fr.Outage.Spread || fr.Outage.Ms > 5 || fr.Failback == nil || !fr.Failback.Spread {
		t.Errorf("spread: %+v %+v", fr.Outage, fr.Failback)
	}
	// A gap at the window's edge, after the restore: the failback is open.
	r, o = outageRun(t, "v3.12-udp-20m-l1000-cut-at-end")
	fr = results.FailoverResult{DownAtSeconds: 1, RestoreAtSeconds: 2}
	FillFailoverFlow(&fr, r, o)
	if fr.Failback == nil || !fr.Failback.Open || fr.Outage != nil {
		t.Errorf("edge: %+v %+v", fr.Outage, fr.Failback)
	}
	fr.Member, fr.Bond, fr.Hypervisor = "ul0", "bond-ul", "compute1"
	fr.Before = &results.BondState{Mode: "active-backup", Active: "ul0", Members: []results.BondMember{{Name: "ul0", Up: true}, {Name: "ul1", Up: true}}}
	fr.Down, fr.Restore = &results.FailoverAction{Command: "ip link set ul0 down"}, &results.FailoverAction{Command: "ip link set ul0 up"}
	if v, reason, _ := results.JudgeFailover(fr); v != results.FailoverFail || !strings.Contains(reason, "never came back within the window") {
		t.Errorf("%s: %s", v, reason)
	}
}
