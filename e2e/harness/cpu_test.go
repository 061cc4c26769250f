package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/hostcpu"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// logged is a Runner that records every command it runs in a real
// remote.CommandLog, as the SSH and Kubernetes runners do: commands.jsonl is
// the evidence of what ran when.
type logged struct {
	remote.Runner
	log *remote.CommandLog
}

func (l logged) Run(ctx context.Context, cmd string) (remote.Result, error) {
	start := time.Now()
	res, err := l.Runner.Run(ctx, cmd)
	res.Duration = time.Since(start)
	res.Target = l.Name()
	l.log.Record(res, start, false, false, err)
	return res, err
}

func (l logged) Start(ctx context.Context, cmd string) (remote.Process, error) {
	l.log.Record(remote.Result{Target: l.Name(), Cmd: cmd}, time.Now(), false, true, nil)
	return l.Runner.Start(ctx, cmd)
}

// cpuPair is the fake pair with traffic.host_cpu on: each hypervisor
// answers the reading command with its recorded lab readings (before,
// then after), and OVS's coverage counters (drops.go) with recorded
// readings: compute1's lab switch dropping nothing, compute2's switch whose
// tunnel next hop does not answer ARP dropping 22 packets between its two;
// every command logged to <run dir>/commands.jsonl.
func cpuPair(t *testing.T) (*pair, *Pair, string) {
	wd := newPair(t)
	wd.cfg.Traffic.Duration = time.Second
	wd.cfg.Traffic.Repeats = 2
	wd.cfg.Traffic.HostCPU = true
	out := iperfJSON(t, "v3.12-tcp-p1.json")
	wd.guests[1].Play.Client = fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
	for i, hv := range []string{"hv1", "hv2"} {
		td := filepath.Join("..", "hostcpu", "testdata")
		wd.hvs[i].On(hostcpu.Command(),
			fakeremote.Reply{Stdout: readFile(t, filepath.Join(td, "reading-lab-"+hv+"-before.txt"))},
			fakeremote.Reply{Stdout: readFile(t, filepath.Join(td, "reading-lab-"+hv+"-after.txt"))})
	}
	wd.answerCoverage(t)
	s := wd.session()
	path := filepath.Join(s.Dir, "commands.jsonl")
	log, err := remote.OpenCommandLog(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	s.Guests = []remote.Runner{logged{wd.guests[0], log}, logged{wd.guests[1], log}}
	s.run.Hypervisors = map[string]remote.Runner{hvNames[0]: logged{wd.hvs[0], log}, hvNames[1]: logged{wd.hvs[1], log}}
	return wd, s, path
}

// answerCoverage scripts both hypervisors' OVS coverage readings
// (drops.go), before then after each window, from recorded outputs:
// compute1's lab switch dropping nothing, compute2's switch whose tunnel
// next hop does not answer ARP dropping 22 packets between its two.
func (wd *pair) answerCoverage(t *testing.T) {
	t.Helper()
	cov := coverageCommand(wd.cfg)
	td := filepath.Join("..", "offload", "testdata", "coverage")
	rec := func(name string) fakeremote.Reply {
		return fakeremote.Reply{Stdout: readFile(t, filepath.Join(td, name))}
	}
	wd.hvs[0].On(cov, rec("ovs-3.1-lab-zed-hv1.txt"))
	wd.hvs[1].On(cov, rec("ovs-3.1-tunnel-neigh-miss-before.txt"), rec("ovs-3.1-tunnel-neigh-miss-after.txt"))
}

func readLog(t *testing.T, path string) []remote.LogEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []remote.LogEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 8<<20)
	for sc.Scan() {
		var e remote.LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("commands.jsonl: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// With the CPU readings on, nothing runs on a hypervisor or a guest while
// a measured window's clients run: by commands.jsonl's own timestamps,
// every reading ends before the window's first client starts or starts
// after its last client ended, and every other command is outside the
// window too (the clients themselves excepted).
func TestHostCPUReadingsOutsideTheWindow(t *testing.T) {
	wd, s, logPath := cpuPair(t)
	p, _ := iperf3.Lookup("tcp-p1")
	pr, err := s.RunProfile(context.Background(), p)
	if err != nil {
		t.Fatalf("RunProfile: %v", err)
	}
	entries := readLog(t, logPath)
	end := func(e remote.LogEntry) time.Time {
		return e.Start.Add(time.Duration(e.DurationSeconds * float64(time.Second)))
	}
	// The windows: each repeat's client command, from its start to its end.
	type window struct{ from, to time.Time }
	var windows []window
	for _, e := range entries {
		if strings.HasPrefix(e.Cmd, "iperf3 -c ") {
			windows = append(windows, window{e.Start, end(e)})
		}
	}
	if len(windows) != 2 {
		t.Fatalf("%d client commands in commands.jsonl, want 2 (one per repeat)", len(windows))
	}
	cov := coverageCommand(wd.cfg)
	reading := func(cmd string) bool { return cmd == hostcpu.Command() || cmd == cov }
	readings, covReadings := 0, 0
	for _, e := range entries {
		if strings.HasPrefix(e.Cmd, "iperf3 -c ") {
			continue
		}
		switch e.Cmd {
		case hostcpu.Command():
			readings++
		case cov:
			covReadings++
		}
		for i, w := range windows {
			if !end(e).Before(w.from) && !e.Start.After(w.to) {
				t.Errorf("%s ran %s..%s, inside repeat %d's window %s..%s: %s", e.Target,
					e.Start.Format(time.StampMicro), end(e).Format(time.StampMicro), i+1,
					w.from.Format(time.StampMicro), w.to.Format(time.StampMicro), e.Cmd[:min(60, len(e.Cmd))])
			}
		}
	}
	// Two readings (before, after) on two hypervisors per repeat, of each kind.
	if readings != 8 || covReadings != 8 {
		t.Errorf("%d CPU and %d coverage readings in commands.jsonl, want 8 each", readings, covReadings)
	}
	// In the order the commands started, each client command comes right
	// after the four readings before it and right before the four after it.
	sort.SliceStable(entries, func(a, b int) bool { return entries[a].Start.Before(entries[b].Start) })
	clients := 0
	for i, e := range entries {
		if !strings.HasPrefix(e.Cmd, "iperf3 -c ") {
			continue
		}
		clients++
		if i < 4 || i+4 >= len(entries) {
			t.Fatalf("client %d at position %d of %d commands", clients, i, len(entries))
		}
		for _, n := range []int{i - 4, i - 3, i - 2, i - 1, i + 1, i + 2, i + 3, i + 4} {
			if !reading(entries[n].Cmd) {
				t.Errorf("repeat %d: command %d next to the client is %q, want a reading", clients, n, entries[n].Cmd)
			}
		}
	}

	// The numbers: the recorded lab readings are one machine (same boot id).
	for _, run := range pr.Runs {
		c := run.HostCPU
		if c == nil || len(c.Hosts) != 2 {
			t.Fatalf("repeat %d: host CPU %+v", run.Repeat, c)
		}
		for _, h := range c.Hosts {
			if h.Error != "" || h.Busy <= 0 || h.OVS == nil || h.CPUs != 2 || h.SpanSeconds < 2.8 || h.SpanSeconds > 4 {
				t.Errorf("repeat %d %s: %+v", run.Repeat, h.Hypervisor, h)
			}
		}
		if !c.SharedHost || c.BusyCores == nil || *c.BusyCores != c.Hosts[0].Busy {
			t.Errorf("repeat %d: one machine must count once: %+v", run.Repeat, c)
		}
		if *c.OVSCores != *c.Hosts[0].OVS+*c.Hosts[1].OVS {
			t.Errorf("repeat %d: the two ovs-vswitchd (pids %d, %d) must both count", run.Repeat, c.Hosts[0].OVSPID, c.Hosts[1].OVSPID)
		}
		if want := *c.BusyCores / (run.DeliveredBps / 10e9); *c.CoresPer10G != want {
			t.Errorf("repeat %d: per 10 Gbit/s %v, want %v", run.Repeat, *c.CoresPer10G, want)
		}
		// iperf3's own end.cpu_utilization_percent of v3.12-tcp-p1.json.
		if g := run.GuestCPU; g == nil || g.ClientPercent != 40.463582935236523 || g.ServerPercent != 38.472856015581243 {
			t.Errorf("repeat %d: guest CPU %+v", run.Repeat, g)
		}
		if !run.HostCPU.ReadBefore.Before(run.HostCPU.ReadAfter) {
			t.Errorf("repeat %d: read before %v, after %v", run.Repeat, c.ReadBefore, c.ReadAfter)
		}
		// OVS's drops over the window: none on compute1, 22 on compute2.
		if got := results.DropsLine(run.OVSDrops); len(run.OVSDrops) != 2 || run.OVSDrops[0].Hypervisor != hvNames[0] ||
			got != "OVS counted drops during the window: "+hvNames[1]+" drop_action_of_pipeline 22" {
			t.Errorf("repeat %d: OVS drops %+v (%q)", run.Repeat, run.OVSDrops, got)
		}
	}
	if sm := pr.Summary.CPU; sm == nil || sm.HostBusy.N != 2 || sm.CoresPer10G.N != 2 || !sm.SharedHost || sm.GuestClient.N != 2 {
		t.Errorf("summary %+v", pr.Summary.CPU)
	}
	if !strings.Contains(wd.console.String(), "(one machine: same boot id)") {
		t.Errorf("log: %s", wd.console.String())
	}
}

// traffic.host_cpu off: no reading command at all, guests' CPU still kept.
func TestHostCPUOff(t *testing.T) {
	wd, s, logPath := cpuPair(t)
	wd.cfg.Traffic.HostCPU = false
	wd.cfg.Traffic.Repeats = 1
	p, _ := iperf3.Lookup("tcp-p1")
	pr, err := s.RunProfile(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range readLog(t, logPath) {
		if e.Cmd == hostcpu.Command() {
			t.Errorf("a reading ran with host_cpu off: %s", e.Target)
		}
	}
	if pr.Runs[0].HostCPU != nil || pr.Runs[0].GuestCPU == nil {
		t.Errorf("run %+v", pr.Runs[0])
	}
}

// A hypervisor whose reading fails: its number is missing with the reason,
// the other hypervisor's reading is kept, the repeat itself succeeds.
func TestHostCPUReadingFails(t *testing.T) {
	wd, s, _ := cpuPair(t)
	wd.cfg.Traffic.Repeats = 1
	wd.hvs[1].On(hostcpu.Command(), fakeremote.Reply{Stdout: []byte("sh: 1: cannot open /proc/stat\n"), Exit: 2})
	p, _ := iperf3.Lookup("tcp-p1")
	pr, err := s.RunProfile(context.Background(), p)
	if err != nil {
		t.Fatalf("a failed reading failed the repeat: %v", err)
	}
	c := pr.Runs[0].HostCPU
	if c.Hosts[0].Error != "" || !strings.Contains(c.Hosts[1].Error, "reading before the window") || c.BusyCores != nil {
		t.Errorf("hosts %+v, pair %v", c.Hosts, c.BusyCores)
	}
	if sm := pr.Summary.CPU; sm.HostBusy.N != 0 || len(sm.Missing) == 0 {
		t.Errorf("summary %+v", sm)
	}
	if res, err := results.Load(filepath.Join(s.Dir, ResultsFile)); err != nil || res.Profiles[0].Runs[0].HostCPU == nil {
		t.Errorf("results file: %v", err)
	}
}
