package hostcpu

import (
	"math"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseStatRecorded(t *testing.T) {
	st, err := ParseStat(read(t, "proc-stat-2cpu-a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// cpu  982301 214121 468190 3907922 9087 0 71031 52420 0 0
	want := Times{User: 982301, Nice: 214121, System: 468190, Idle: 3907922, IOWait: 9087, SoftIRQ: 71031, Steal: 52420}
	if st.All != want {
		t.Errorf("aggregate: got %+v, want %+v", st.All, want)
	}
	if len(st.CPUs) != 2 || st.IDs[0] != 0 || st.IDs[1] != 1 {
		t.Fatalf("per-CPU lines: got %d (%v), want cpu0 and cpu1", len(st.CPUs), st.IDs)
	}
	if st.CPUs[1].User != 489804 || st.CPUs[1].Steal != 26806 {
		t.Errorf("cpu1: got %+v", st.CPUs[1])
	}
	if got := st.All.Total(); got != 982301+214121+468190+3907922+9087+71031+52420 {
		t.Errorf("total %d", got)
	}
	if st.All.Busy()+st.All.Idle+st.All.IOWait != st.All.Total() {
		t.Error("busy + idle + iowait != total")
	}
}

func TestParseStatRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"empty":              "",
		"no aggregate":       "cpu0 1 2 3 4 5 6 7 8 0 0\n",
		"no per-CPU":         "cpu  1 2 3 4 5 6 7 8 0 0\nintr 5\n",
		"seven counters":     "cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n",
		"negative":           "cpu  1 2 -3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n",
		"not a number":       "cpu  1 2 x 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n",
		"guest beyond user":  "cpu  1 2 3 4 5 6 7 8 9 0\ncpu0 1 2 3 4 5 6 7 8\n",
		"two aggregates":     "cpu  1 2 3 4 5 6 7 8\ncpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n",
		"odd cpu name":       "cpu  1 2 3 4 5 6 7 8\ncpux 1 2 3 4 5 6 7 8\n",
		"sum overflows":      "cpu  18446744073709551615 1 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n",
		"not /proc/stat":     "MemTotal: 1 kB\n",
		"per-CPU too short":  "cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3\n",
		"aggregate 3 fields": "cpu 1 2 3\ncpu0 1 2 3 4 5 6 7 8\n",
	} {
		if _, err := ParseStat([]byte(in)); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
}

func TestParseTasksRecorded(t *testing.T) {
	ts, err := ParseTasks(read(t, "ovs-vswitchd-hv1-task-stat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Comm)
	}
	if got := strings.Join(names, ","); got != "ovs-vswitchd,ct_clean1,ipf_clean2,urcu3,handler4,revalidator5" {
		t.Errorf("threads: %s", got)
	}
	// 29012 (revalidator5) S 1 28992 28992 0 -1 4194368 15 815 0 0 4 1 ...
	if r := ts[5]; r.ID != 29012 || r.UTime != 4 || r.STime != 1 {
		t.Errorf("revalidator5: %+v", r)
	}
	p, err := ParseTask(string(read(t, "ovs-vswitchd-hv1-stat.txt")))
	if err != nil || p.ID != 28992 || p.Comm != "ovs-vswitchd" || p.UTime != 24 || p.STime != 23 {
		t.Errorf("process line: %+v %v", p, err)
	}
}

func TestParseTaskCommWithParentheses(t *testing.T) {
	p, err := ParseTask(string(read(t, "comm-with-parens-stat.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != 32268 || p.Comm != "a) b (c" || p.UTime != 0 || p.STime != 0 {
		t.Errorf("got %+v", p)
	}
	// The recorded revalidator5 line with only its comm replaced by names
	// OVS gives threads elsewhere (DPDK pmd threads, e.g. "pmd-c01/id:8").
	line := "29012 (revalidator5) S 1 28992 28992 0 -1 4194368 15 815 0 0 4 1 0 0 20 0 6 0 2836013 427442176 5988"
	for _, comm := range []string{"pmd-c01/id:8", "handler12", "revalidator13", "urcu3", "x) S 1 2 3 (y", ")"} {
		p, err := ParseTask(strings.Replace(line, "revalidator5", comm, 1))
		if err != nil || p.Comm != comm || p.UTime != 4 || p.STime != 1 {
			t.Errorf("comm %q: %+v %v", comm, p, err)
		}
	}
	for name, in := range map[string]string{
		"too few fields": "29012 (revalidator5) S 1 28992 28992 0 -1 4194368 15 815 0 0 4",
		"no comm":        "29012 revalidator5 S 1 28992 28992 0 -1 4194368 15 815 0 0 4 1 0",
		"no pid":         "(revalidator5) S 1 28992 28992 0 -1 4194368 15 815 0 0 4 1 0",
		"bad utime":      "29012 (revalidator5) S 1 28992 28992 0 -1 4194368 15 815 0 0 -4 1 0",
		"long state":     "29012 (revalidator5) SS 1 28992 28992 0 -1 4194368 15 815 0 0 4 1 0",
	} {
		if _, err := ParseTask(in); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
	if _, err := ParseTasks([]byte(line + "\n" + line + "\n")); err == nil {
		t.Error("a thread listed twice was accepted")
	}
}

func TestParseReadingLab(t *testing.T) {
	r, err := ParseReading(read(t, "reading-lab-hv1-before.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.BootID != "229610b2-f77b-410b-8d63-8380cd2461ab" || r.Hostname != "compute1" {
		t.Errorf("host: %q %q", r.BootID, r.Hostname)
	}
	if r.OVS.PID != 28992 || r.OVS.Source != "/run/openvswitch/ovs-vswitchd.pid" || len(r.OVS.Candidates) != 2 || r.OVS.Process == nil || len(r.OVS.Threads) != 6 {
		t.Errorf("ovs: %+v", r.OVS)
	}
	r2, err := ParseReading(read(t, "reading-lab-hv2-before.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r2.BootID != r.BootID || r2.OVS.PID != 29043 || r2.Hostname != "compute2" {
		t.Errorf("hv2: boot %q pid %d host %q", r2.BootID, r2.OVS.PID, r2.Hostname)
	}
	amb, err := ParseReading(read(t, "reading-lab-rootns-two-ovs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if amb.OVS.PID != 0 || !strings.Contains(amb.OVS.Missing, "2 ovs-vswitchd processes (pids 28992, 29043)") {
		t.Errorf("ambiguous: %+v", amb.OVS)
	}
}

func TestParseReadingRefusesCutShort(t *testing.T) {
	full := string(read(t, "reading-lab-hv1-before.txt"))
	for _, cut := range []string{Marker + " end", Marker + " stat", Marker + " ovs", Marker + " host"} {
		in := strings.Replace(full, cut, "x", 1)
		if _, err := ParseReading([]byte(in)); err == nil {
			t.Errorf("without %q: accepted", cut)
		}
	}
	i := strings.Index(full, Marker+" proc")
	if _, err := ParseReading([]byte(full[:i])); err == nil {
		t.Error("a reading cut before its proc section was accepted")
	}
	none := "@@asap2e2e-cpu host\nb\nh\n@@asap2e2e-cpu stat\ncpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n@@asap2e2e-cpu ovs pid= source= candidates=\n@@asap2e2e-cpu end\n"
	r, err := ParseReading([]byte(none))
	if err != nil || r.OVS.PID != 0 || r.OVS.Missing != "no ovs-vswitchd process where the reading ran" {
		t.Errorf("no OVS: %+v %v", r.OVS, err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestDeltaLab(t *testing.T) {
	b, err := ParseReading(read(t, "reading-lab-hv1-before.txt"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseReading(read(t, "reading-lab-hv1-after.txt"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := Delta(b, a)
	if err != nil {
		t.Fatal(err)
	}
	total := float64(a.Stat.All.Total() - b.Stat.All.Total())
	busy := float64(a.Stat.All.Busy() - b.Stat.All.Busy())
	if u.CPUs != 2 || !near(u.ElapsedTicks, total/2) || !near(u.Busy, busy/(total/2)) {
		t.Errorf("usage %+v (total Δ %v, busy Δ %v)", u, total, busy)
	}
	// The readings were 3 s apart (USER_HZ 100): about 300 ticks per CPU.
	if u.ElapsedTicks < 280 || u.ElapsedTicks > 400 {
		t.Errorf("elapsed %v ticks per CPU for a 3 s span", u.ElapsedTicks)
	}
	if sum := u.User + u.Guest + u.System + u.IRQ + u.SoftIRQ + u.Steal; !near(sum, u.Busy) {
		t.Errorf("parts %v != busy %v", sum, u.Busy)
	}
	if u.Busy < 0 || u.Busy > 2 {
		t.Errorf("busy %v cores on 2 CPUs", u.Busy)
	}
	want := float64(a.OVS.Process.UTime+a.OVS.Process.STime-b.OVS.Process.UTime-b.OVS.Process.STime) / u.ElapsedTicks
	if u.OVS == nil || !near(*u.OVS, want) {
		t.Errorf("ovs %v, want %v (%s)", u.OVS, want, u.OVSMissing)
	}
}

func TestDeltaRefuses(t *testing.T) {
	b, _ := ParseReading(read(t, "reading-lab-hv1-before.txt"))
	a, _ := ParseReading(read(t, "reading-lab-hv1-after.txt"))
	if _, err := Delta(a, b); err == nil || !strings.Contains(err.Error(), "backwards") {
		t.Errorf("readings swapped: %v", err)
	}
	if _, err := Delta(b, b); err == nil || !strings.Contains(err.Error(), "no time passed") {
		t.Errorf("same reading twice: %v", err)
	}
	r := a
	r.BootID = "other"
	if _, err := Delta(b, r); err == nil || !strings.Contains(err.Error(), "rebooted") {
		t.Errorf("reboot: %v", err)
	}
	r = a
	r.Stat.IDs, r.Stat.CPUs = r.Stat.IDs[:1], r.Stat.CPUs[:1]
	if _, err := Delta(b, r); err == nil {
		t.Error("a CPU going offline was accepted")
	}
	// iowait may fall while idle grows: taken together, not refused.
	r = a
	r.Stat.All.IOWait = b.Stat.All.IOWait - 1
	r.Stat.All.Idle = a.Stat.All.Idle + (a.Stat.All.IOWait - r.Stat.All.IOWait)
	if _, err := Delta(b, r); err != nil {
		t.Errorf("iowait moved to idle: %v", err)
	}
}

func TestDeltaOVSMissingOrRestarted(t *testing.T) {
	b, _ := ParseReading(read(t, "reading-lab-hv1-before.txt"))
	a, _ := ParseReading(read(t, "reading-lab-hv1-after.txt"))
	amb, _ := ParseReading(read(t, "reading-lab-rootns-two-ovs.txt"))
	r := a
	r.OVS = amb.OVS
	u, err := Delta(b, r)
	if err != nil || u.OVS != nil || !strings.Contains(u.OVSMissing, "after: 2 ovs-vswitchd processes") || u.Busy <= 0 {
		t.Errorf("missing after: %+v %v", u, err)
	}
	r = a
	r.OVS.PID = 4242
	u, err = Delta(b, r)
	if err != nil || u.OVS != nil || !strings.Contains(u.OVSMissing, "restarted") {
		t.Errorf("restart: %+v %v", u, err)
	}
}

func TestThreadKinds(t *testing.T) {
	for comm, want := range map[string]string{"ovs-vswitchd": KindMain, "handler12": KindHandler, "revalidator13": KindRevalidator,
		"pmd-c01/id:8": KindPMD, "urcu3": KindOther, "ct_clean1": KindOther} {
		if got := ThreadKind(comm); got != want {
			t.Errorf("%s: %s, want %s", comm, got, want)
		}
	}
}
