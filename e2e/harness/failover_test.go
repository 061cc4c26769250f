package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
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
			resets, err := envinfo.ParseOVSLinkResets(readRepo(t, "envinfo/testdata/ovsbond/"+c.mode+"-link-resets-"+f+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			st[i] = BondStateFromOVS(b, other, resets)
		}
		leg := strings.TrimSpace(string(readRepo(t, "envinfo/testdata/ovsbond/"+c.mode+"-leg.txt")))
		if st[0].MonitorMs != c.monitor || st[0].DetectMode != c.detect || st[0].Active != leg {
			t.Errorf("%s before: %+v", c.mode, st[0])
		}
		if _, w, ok := st[0].Bound(); !ok || w != c.boundWords {
			t.Errorf("%s bound %q %v", c.mode, w, ok)
		}
		if m, _ := st[1].Member(leg); m.Up || st[1].Active == leg || st[1].Active == "" || m.LinkChanges <= 0 {
			t.Errorf("%s after down: %+v", c.mode, st[1])
		}
	}
	b, _ := envinfo.ParseOVSBond(readRepo(t, "envinfo/testdata/ovsbond/balance-tcp-before.txt"))
	if st := BondStateFromOVS(b, nil, nil); st.MonitorMs != -1 || st.Members[0].LinkChanges != -1 {
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

// failoverPair is the fake pair with an OVS bond on the source hypervisor
// (hvs[1], the sending guest's), answering with the recorded OVS 3.1 bond
// (envinfo/testdata/ovsbond, miimon 100 + downdelay 100): before, after the
// window, after the second down, after its restore; the window's client
// answers with the recorded 1.1 s cut at +2.08 s (iperf3/testdata/outage)
// after as long as it ran; the evidence windows' flows are the fake pair's.
func failoverPair(t *testing.T, down fakeremote.Reply, ab string) (*Pair, *pair) {
	wd := newPair(t)
	wd.cfg.Offload.FlowDuration = 6 * time.Second
	wd.cfg.Failover = config.Failover{Enabled: true, Hypervisor: config.FailoverSource,
		DownCommand: config.DefaultFailoverDownCommand, RestoreCommand: config.DefaultFailoverRestoreCommand,
		DownAt: 2 * time.Second, RestoreAt: 3 * time.Second, Duration: 6 * time.Second, BitrateBps: 20_000_000, Length: 1000,
		ReportInterval: 100 * time.Millisecond, ReoffloadWait: time.Second, EvidenceFlow: time.Second}
	cut := readRepo(t, "iperf3/testdata/outage/v3.12-udp-20m-l1000-cut-1s.json")
	tcp, udp := iperfJSON(t, "v3.12-tcp-p1.json"), iperfJSON(t, "v3.12-udp-b0-p1.json")
	evidenceClient := fakeremote.SleepThen(func(isUDP bool) remote.Result {
		if isUDP {
			return remote.Result{Stdout: udp}
		}
		return remote.Result{Stdout: tcp}
	})
	window := fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: cut} })
	wd.guests[1].Play.Client = func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		if udp && secs == 6 {
			return window(ctx, secs, udp)
		}
		return evidenceClient(ctx, secs, udp)
	}
	hv := wd.hvs[1]
	bond := func(f string) fakeremote.Reply {
		return fakeremote.Reply{Stdout: readRepo(t, "envinfo/testdata/ovsbond/"+ab+"-"+f+".txt")}
	}
	hv.On(BondListCommand, fakeremote.Reply{})
	hv.On(OVSBondListCommand, fakeremote.Reply{Stdout: readRepo(t, "envinfo/testdata/ovsbond/bond-list.txt")})
	hv.On(ProcBondCommand("bond-ul"), fakeremote.Reply{Exit: 1, Stderr: []byte("cat: /proc/net/bonding/bond-ul: No such file or directory\n")})
	hv.On(OVSBondShowCommand("bond-ul"), bond("before"), bond("restored"), bond("down"), bond("restored"))
	hv.On(OVSBondConfigCommand("bond-ul"), bond("other-config"))
	hv.On(LAGProbeCommand, fakeremote.Reply{})
	hv.On(OVSLinkResetsCommand([]string{"ul0", "ul1"}), bond("link-resets-before"), bond("link-resets-restored"), bond("link-resets-down"), bond("link-resets-restored"))
	leg := strings.TrimSpace(string(readRepo(t, "envinfo/testdata/ovsbond/"+ab+"-leg.txt")))
	hv.On("ip link set "+leg+" down", down)
	hv.On("ip link set "+leg+" up", fakeremote.Reply{})
	return wd.session(), wd
}

// The window's only hypervisor commands are the down at +2 s and the
// restore at +3 s of the clients' start; the outage is the recorded cut's,
// within the bond's goal (100 + 100 + 100 ms)? No: 1.1 s is over it, and
// the verdict says so with the numbers; the bond's states and the
// re-offload are read outside the window.
func TestRunFailoverWindow(t *testing.T) {
	s, wd := failoverPair(t, fakeremote.Reply{}, "active-backup-miimon")
	fr, err := s.RunFailover(context.Background())
	if fr.Verdict != results.FailoverFail || !fr.Measured || err == nil || !strings.Contains(fr.Reason, "over the goal 300 ms (the bond's bound: miimon 100 ms + downdelay 100 ms + 100 ms)") {
		t.Fatalf("verdict %s measured %v: %s (err %v)", fr.Verdict, fr.Measured, fr.Reason, err)
	}
	if fr.Hypervisor != hvNames[1] || fr.Bond != "bond-ul" || fr.Member != "ul0" || fr.MemberFrom != "active before" || fr.Outage == nil || fr.Outage.Lost != 2829 {
		t.Errorf("result %+v outage %+v", fr, fr.Outage)
	}
	if fr.Down == nil || fr.Restore == nil || fr.Down.AtSeconds < 1.95 || fr.Down.AtSeconds > 2.3 || fr.Restore.AtSeconds < 2.95 || fr.Restore.AtSeconds > 3.3 {
		t.Errorf("actions %+v %+v", fr.Down, fr.Restore)
	}
	if fr.Before == nil || fr.AfterWindow == nil || fr.AfterDown == nil || fr.AfterRestore == nil || fr.AfterDown.Active != "ul1" {
		t.Errorf("states %v / %v / %v / %v", fr.Before.Line(), fr.AfterWindow.Line(), fr.AfterDown.Line(), fr.AfterRestore.Line())
	}
	if len(fr.Reoffload) != 2 || fr.Down2 == nil || fr.Restore2 == nil {
		t.Errorf("re-offload %+v, second actions %+v %+v", fr.Reoffload, fr.Down2, fr.Restore2)
	}
	at, end := wd.world.Clients()
	if len(at) == 0 {
		t.Fatal("no client ran")
	}
	for _, e := range wd.world.Log() {
		if e.At.After(at[0]) && e.At.Before(end[0]) && (e.Runner == hvNames[0] || e.Runner == hvNames[1]) && !strings.HasPrefix(e.Cmd, "ip link set ") {
			t.Errorf("%s read during the window: %s at +%s", e.Runner, e.Cmd, e.At.Sub(at[0]))
		}
	}
	t.Logf("%s: %s", fr.Verdict, fr.Reason)
	for _, ro := range fr.Reoffload {
		t.Logf("re-offload after the %s: %s: %s", ro.After, ro.Words(), ro.Reason)
	}
	snap := s.Results.Snapshot()
	if len(snap.Failover) != 1 || snap.Failover[0].Verdict != fr.Verdict {
		t.Errorf("results file: %+v", snap.Failover)
	}
}

// The down command fails: the verdict names the host, the command and its
// stderr; the restore still ran, and nothing was taken down again.
func TestRunFailoverDownFails(t *testing.T) {
	s, _ := failoverPair(t, fakeremote.Reply{Exit: 2, Stderr: []byte("RTNETLINK answers: Operation not permitted\n")}, "active-backup-miimon")
	fr, err := s.RunFailover(context.Background())
	want := "the down command failed: on " + hvNames[1] + " `ip link set ul0 down` exited 2: RTNETLINK answers: Operation not permitted"
	if err == nil || fr.Verdict != results.FailoverFail || fr.Measured || !strings.Contains(fr.Reason, want) {
		t.Fatalf("%s: %s", fr.Verdict, fr.Reason)
	}
	if fr.Restore == nil || fr.Restore.ExitCode != 0 || fr.Down2 != nil {
		t.Errorf("restore %+v, down again %+v", fr.Restore, fr.Down2)
	}
}

// The member named in the config is already down before the window (the
// recorded bond after its leg went down): refused with the bond's state,
// and no command ran on the hypervisor.
func TestRunFailoverMemberAlreadyDown(t *testing.T) {
	s, wd := failoverPair(t, fakeremote.Reply{}, "active-backup-carrier")
	s.run.Config.Failover.Member = "ul1" // the recorded leg taken down
	wd.hvs[1].On(OVSBondShowCommand("bond-ul"), fakeremote.Reply{Stdout: readRepo(t, "envinfo/testdata/ovsbond/active-backup-carrier-down.txt")})
	fr, err := s.RunFailover(context.Background())
	if err == nil || fr.Verdict != results.FailoverFail || fr.Measured || !strings.Contains(fr.Reason, "member ul1 of bond bond-ul on "+hvNames[1]+" was already down before the window") {
		t.Fatalf("%s: %s (%v)", fr.Verdict, fr.Reason, err)
	}
	for _, e := range wd.world.Log() {
		if strings.HasPrefix(e.Cmd, "ip link set") || strings.HasPrefix(e.Cmd, "iperf3 -c") {
			t.Errorf("%s ran %s", e.Runner, e.Cmd)
		}
	}
}

// A Linux bond without MII monitoring (miimon 0: ARP monitoring or none)
// states no bound: the goal must come from failover.outage_goal_ms.
func TestBondStateFromLinuxWithoutMiimon(t *testing.T) {
	b, err := envinfo.ParseBonding([]byte("Bonding Mode: fault-tolerance (active-backup)\nCurrently Active Slave: a\nMII Status: up\nMII Polling Interval (ms): 0\nDown Delay (ms): 0\n\nSlave Interface: a\nMII Status: up\nLink Failure Count: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := BondStateFromLinux("bond0", b).Bound(); ok {
		t.Error("a bond without miimon has a bound")
	}
}
