package hostcpu

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
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
	// By hand from the line above: total = every counter but guest and guest_nice (which user and
	// nice already hold); busy = total without idle and iowait.
	if got := st.All.Total(); got != 5705072 {
		t.Errorf("total %d, want 5705072", got)
	}
	if got := st.All.Busy(); got != 1788063 {
		t.Errorf("busy %d, want 1788063 (user 982301 + nice 214121 + system 468190 + softirq 71031 + steal 52420)", got)
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

// TestDeltaLab: the lab's hv1 read 3 s apart (testdata/README.md), every number worked out by
// hand from the two files:
//
//	before: cpu  991562 214341 475172 3911558 9160 0 72973 53286 0 0
//	after:  cpu  991608 214341 475186 3912200 9160 0 72973 53286 0 0
//	Δ: user 46, system 14, idle 642, the rest 0; Δtotal 702 over 2 CPUs = 351 ticks per CPU (3.51 s)
//	ovs-vswitchd (pid 28992, process line) utime+stime 832+1896 -> 833+1897: 2 ticks
//	its threads: revalidator5 8+2 -> 9+2 (1 tick), ovs-vswitchd 823+1892 both times, others 0
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
	want := results.CPUUsage{CPUs: 2, SpanSeconds: 3.51, Busy: 60.0 / 351, User: 46.0 / 351, System: 14.0 / 351}
	got := u
	got.OVS, got.OVSThreads, got.OVSPID = nil, nil, 0
	if !nearUsage(got, want) {
		t.Errorf("usage\n got  %+v\n want %+v", got, want)
	}
	if u.OVS == nil || !near(*u.OVS, 2.0/351) || u.OVSMissing != "" || u.OVSPID != 28992 {
		t.Errorf("ovs %v (%q, pid %d), want %v cores of pid 28992", u.OVS, u.OVSMissing, u.OVSPID, 2.0/351)
	}
	wantThreads := map[string]float64{KindMain: 0, KindRevalidator: 1.0 / 351, KindHandler: 0, KindOther: 0}
	if len(u.OVSThreads) != len(wantThreads) {
		t.Errorf("threads %v, want %v", u.OVSThreads, wantThreads)
	}
	for k, v := range wantThreads {
		if got, ok := u.OVSThreads[k]; !ok || !near(got, v) {
			t.Errorf("threads %s: %v, want %v", k, got, v)
		}
	}
}

func nearUsage(a, b results.CPUUsage) bool {
	return a.CPUs == b.CPUs && near(a.SpanSeconds, b.SpanSeconds) && near(a.Busy, b.Busy) && near(a.User, b.User) &&
		near(a.Guest, b.Guest) && near(a.System, b.System) && near(a.IRQ, b.IRQ) && near(a.SoftIRQ, b.SoftIRQ) &&
		near(a.Steal, b.Steal) && a.OVSMissing == b.OVSMissing
}

// TestDeltaGuestTime: a hypervisor running vCPUs counts their time in user (and nice) and again in
// guest (and guest_nice): User is what remains of user+nice without it. Two lines written by hand
// in /proc/stat's layout (proc(5)), 4 CPUs:
//
//	Δ: user 400, nice 40, system 100, idle 2600, iowait 20, irq 10, softirq 30, steal 0, guest 300, guest_nice 20
//	Δtotal 3200 over 4 CPUs = 800 ticks per CPU (8 s); busy 580 ticks
func TestDeltaGuestTime(t *testing.T) {
	stat := func(user, nice, system, idle, iowait, irq, softirq, steal, guest, guestNice uint64) Stat {
		all := Times{User: user, Nice: nice, System: system, Idle: idle, IOWait: iowait, IRQ: irq, SoftIRQ: softirq,
			Steal: steal, Guest: guest, GuestNice: guestNice}
		return Stat{All: all, CPUs: make([]Times, 4), IDs: []int{0, 1, 2, 3}}
	}
	b := Reading{BootID: "x", Stat: stat(1000, 100, 500, 9000, 50, 5, 60, 0, 700, 40)}
	a := Reading{BootID: "x", Stat: stat(1400, 140, 600, 11600, 70, 15, 90, 0, 1000, 60)}
	u, err := Delta(b, a)
	if err != nil {
		t.Fatal(err)
	}
	want := results.CPUUsage{CPUs: 4, SpanSeconds: 8, Busy: 580.0 / 800, User: 120.0 / 800, Guest: 320.0 / 800,
		System: 100.0 / 800, IRQ: 10.0 / 800, SoftIRQ: 30.0 / 800,
		OVSMissing: ""}
	got := u
	got.OVS, got.OVSThreads, got.OVSMissing = nil, nil, ""
	if !nearUsage(got, want) {
		t.Errorf("usage\n got  %+v\n want %+v", got, want)
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
