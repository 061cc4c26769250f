package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
)

// Rows of issue 14: the data path vanishes or a part stops answering while
// a run is in a given phase. Each row gates its fault on state it can see
// (the harness's iperf3 client process, a harness.log line, a held API
// call) and checks afterwards that the fault landed where it was meant to,
// so a row cannot pass or fail by losing a race with the harness.
//
// OpenFlow cookies of these rows (gatePort uses 0xfa0000 + port).
const (
	cookieNetworkCut = "0xfb0001"
	cookieSSHGate    = "0xfb0002"
)

// windowSpec is the run shape of the mid-window rows: one 40 s TCP window,
// long enough to hurt it well inside.
func windowSpec() spec {
	return spec{suite: "perf", labels: "throughput", edit: func(c map[string]any) {
		set(c, "traffic.profiles", []string{"tcp-p1"})
		set(c, "traffic.duration", "40s")
	}}
}

// faultLead is how long the iperf3 client runs before a mid-window fault:
// inside the window, with a few seconds of traffic behind it.
const faultLead = 5 * time.Second

func dataPathRows(t *testing.T, env *labEnv) {
	midWindowRows := []struct {
		name, fault string
		// hurt makes the fault once the window runs; it returns what undoes
		// it after the harness exited (nil: nothing).
		hurt func(t *testing.T, tp *topo) (undo func())
		said func(tp *topo) string // what the harness must say (a regular expression)
	}{
		{"datapath/port-deleted", "receiving guest's data port deleted (openstack port delete)",
			func(t *testing.T, tp *topo) func() {
				if _, err := env.openstack(context.Background(), "asap2lab-admin", "port delete "+tp.Servers[0].DataPortID); err != nil {
					t.Fatalf("deleting the receiving guest's data port: %v", err)
				}
				return nil // the port is gone once the CLI has its answer
			},
			func(tp *topo) string {
				return `data port \S+ \(` + regexp.QuoteMeta(tp.Servers[0].DataPortID) + `\) no longer exists`
			}},
		{"datapath/network-cut", "receiving guest's network cut (OpenFlow drop of its data MAC in both br-int)",
			func(t *testing.T, tp *topo) func() {
				// A real cut (a dead link, a switch dropping the VF's
				// frames) loses packets in flight: neither guest's kernel is
				// told, its sockets keep retransmitting into nothing, which
				// is what makes iperf3 sit until a guard or a bound ends it.
				// `ip link set down` inside the guest would tell the guest's
				// own stack (local errors at once) and looks like an
				// operator, not a network. So the row drops every frame from
				// and to guest 0's data MAC in br-int of both hypervisors,
				// above all of Neutron's flows; the management path (SSH) is
				// untouched, so the harness can still look and clean up.
				cut := env.addFlows(t, cookieNetworkCut,
					"dl_src="+tp.Servers[0].DataMAC+",actions=drop",
					"dl_dst="+tp.Servers[0].DataMAC+",actions=drop")
				return func() { cut.remove(t) }
			},
			func(tp *topo) string {
				return `iperf3 client on ` + regexp.QuoteMeta(tp.Servers[1].Name) + ` stopped receiving at \d\d:\d\d:\d\d`
			}},
	}
	for _, mw := range midWindowRows {
		t.Run(mw.name, func(t *testing.T) {
			t.Parallel()
			row := record(t, mw.fault, "traffic window (40 s TCP, 5 s in)")
			r := env.start(t, strings.ReplaceAll(mw.name, "/", "-"), windowSpec())
			r.midWindow(t)
			tp := r.topology()
			undo := mw.hurt(t, tp)
			fault := time.Now() // the fault is in place (a little after it began)
			t.Logf("%s: %s (%s, data port %s)", fault.UTC().Format("15:04:05"), mw.fault, tp.Servers[0].Name, tp.Servers[0].DataPortID)
			code := r.wait(6 * time.Minute)
			if undo != nil {
				undo()
			}
			log := r.Log()
			if code == 0 {
				t.Errorf("the run passed although: %s", mw.fault)
			}
			row.faultToFailure(t, log, fault, `FAILED`)
			mustContain(t, "harness output", log+r.Console(), mw.said(tp))
			// A topology damaged behind the harness's back is still torn
			// down: a port already gone counts as deleted.
			bad := teardownFailures(log)
			for _, l := range bad {
				t.Errorf("teardown did not complete: %s", l)
			}
			// iperf3's own guard or the harness's bound, whichever ended it.
			why := firstMatch(log, `iperf3 reported: [^;\n]*|`+reBoundSaid)
			row.Outcome = fmt.Sprintf("exit %d; FAILED: %s; %s; teardown: %d deletes, %d failed", code,
				orNone(why), orNone(explanation(log, "window")), strings.Count(log, "teardown: "), len(bad))
			ending(t, r, row)
		})
	}

	t.Run("hypervisor/ssh-frozen-in-checks", func(t *testing.T) {
		t.Parallel()
		const bound = "15s"
		row := record(t, "a hypervisor's sshd serving this run stops answering (SIGSTOP)", "offload checks")
		r := env.start(t, "hypervisor-ssh-frozen", spec{suite: "perf", labels: "offload", edit: func(c map[string]any) {
			set(c, "intervals.command", map[string]any{"timeout": bound, "poll": "1s"})
			// Short evidence flows; a capture window of 5 s keeps every
			// check on the hypervisor busy for at least 5 s after "checks
			// start" (see below).
			set(c, "offload.flow_duration", "20s")
			set(c, "offload.capture_window", "5s")
		}})
		start := r.waitLogLine(t, `checks start .* after the tcp flow`, 8*time.Minute)
		tp := r.topology()
		hv := tp.Servers[0].Hypervisor
		fr := r.freezeHypervisorSSH(t, hv)
		// Every check begins after that line and lasts at least one capture
		// window, so a freeze inside the window meets at least one of its
		// commands on this hypervisor: the fault cannot miss.
		if late := fr.at.Sub(start); late >= 5*time.Second {
			t.Fatalf("froze %s after the checks started, not within their 5 s capture window: the fault may have missed them", late.Round(time.Millisecond))
		}
		code := r.wait(8 * time.Minute)
		fr.resume(t)
		out := r.Log() + r.Console()
		if code == 0 {
			t.Errorf("the run passed although hypervisor %s stopped answering during the checks", hv)
		}
		// The failure a person sees: the first harness.log line saying a
		// command on the hypervisor was given up.
		row.faultToFailure(t, r.Log(), fr.at, `on `+regexp.QuoteMeta(hv)+`: .*(did not finish|connection lost)`)
		cmds, _ := os.ReadFile(filepath.Join(r.runDir, "commands.jsonl"))
		failed := failedCommands(cmds, "hypervisor "+hv+" ", fr.at)
		held := "no failed command on " + hv + " in commands.jsonl"
		if len(failed) == 0 {
			t.Errorf("commands.jsonl holds no failed command on hypervisor %s after the freeze", hv)
		} else {
			last := failed[len(failed)-1]
			held = fmt.Sprintf("%d commands on %s failed, the last %s after the freeze", len(failed), hv, last.End.Sub(fr.at).Round(100*time.Millisecond))
			t.Logf("%s: %q: %s", held, last.Cmd, last.Error)
		}
		said := mustContain(t, "harness output", out, `hypervisor `+regexp.QuoteMeta(hv)+` .*did not finish within `+bound+` \(intervals.command\)`)
		row.Outcome = fmt.Sprintf("exit %d; froze sshd %v of %s %s after \"checks start\"; %s: %s; %s", code, fr.pids, hv,
			fr.at.Sub(start).Round(100*time.Millisecond), hv, orNone(firstMatch(said, reBoundSaid)), held)
		ending(t, r, row)
	})

	t.Run("guest/dies-in-ssh-wait", func(t *testing.T) {
		t.Parallel()
		const ready = "60s"
		row := record(t, "guest 1 stopped (openstack server stop) while the harness waits for its SSH", "SSH wait")
		// Deterministic by construction: the guests' sshd answers within a
		// second of boot, far too soon to stop a server "during" the wait.
		// So the row holds the harness's first server create at the API
		// (the fault proxy calls back before forwarding it), and meanwhile
		// makes both hypervisors' br-int drop SSH to guest 1's management
		// address (its port exists by then). The harness then waits for
		// guest 1's SSH for as long as the row needs; the row stops the
		// server, waits until no sshd runs in the guest any more, and only
		// then lifts the drop: the harness meets a dead guest, never a live one.
		held, release := make(chan struct{}), make(chan struct{})
		in, err := faultproxy.NewInjector(faultproxy.Plan{Rules: []faultproxy.Rule{{
			Name: "hold-first-server-create", Method: "POST", Path: `/servers$`, Action: faultproxy.ActionDelay, Delay: time.Millisecond, Times: 1,
		}}}, func(h faultproxy.Hit) {
			close(held)
			<-release
		})
		if err != nil {
			t.Fatal(err)
		}
		r := env.start(t, "guest-dies-in-ssh-wait", spec{suite: "smoke", proxy: in, edit: func(c map[string]any) {
			set(c, "intervals.ssh_ready", map[string]any{"timeout": ready, "poll": "2s"})
		}})
		released := false
		releaseOnce := func() {
			if !released {
				released = true
				close(release)
			}
		}
		t.Cleanup(releaseOnce)
		select {
		case <-held:
		case <-r.done:
			t.Fatalf("the harness exited before creating a server; log tail:\n%s", tail(r.Log(), 10))
		case <-time.After(6 * time.Minute):
			t.Fatalf("the harness created no server within 6m; log tail:\n%s", tail(r.Log(), 10))
		}
		ip, err := env.portIP(r.mgmtPortName(1))
		if err != nil {
			releaseOnce()
			t.Fatalf("guest 1's management port: %v", err)
		}
		gate := env.addFlows(t, cookieSSHGate, "tcp,nw_dst="+ip+",tp_dst=22,actions=drop")
		releaseOnce()
		t.Logf("SSH to guest 1's management address %s dropped; server create released", ip)

		waitAt := r.waitLogLine(t, `waiting for SSH on guest \S+-vm1 `, 8*time.Minute)
		tp := r.topology()
		vm1 := tp.Servers[1]
		t.Logf("%s: the harness waits for SSH on %s since %s; stopping it", time.Now().UTC().Format("15:04:05"), vm1.Name, waitAt.Format("15:04:05"))
		if _, err := env.openstack(context.Background(), "asap2lab", "server stop "+vm1.ID); err != nil {
			t.Fatalf("stopping guest 1: %v", err)
		}
		if !r.poll(2*time.Minute, func() bool { return len(netnsPIDs(tp.guestNetns(1), "sshd")) == 0 }) {
			t.Fatalf("sshd still runs in %s 2m after `server stop`", tp.guestNetns(1))
		}
		fault := time.Now()
		gate.remove(t)
		t.Logf("%s: %s stopped (no sshd in its namespace), SSH no longer dropped", fault.UTC().Format("15:04:05"), vm1.Name)
		if r.exited() || strings.Contains(r.Console(), "[FAILED]") {
			t.Fatalf("the harness gave up before the guest died (the row's fault came too late for the %s wait)", ready)
		}
		code := r.wait(6 * time.Minute)
		log, console := r.Log(), r.Console()
		if code == 0 {
			t.Errorf("the run passed although guest 1 died during its SSH wait")
		}
		if grepLine(log, `note: \S+-vm1 runs iperf`) != "" {
			t.Errorf("the harness reached guest 1 over SSH: the row's drop did not hold")
		}
		// The harness's look after the failed wait ("after the wait: …")
		// is its first line after the wait; evidence collection and
		// teardown follow.
		gaveUp, _, ok := firstLogLine(log, waitAt.Add(time.Millisecond), `^after the wait: |not reachable|evidence |teardown: `)
		readyD, _ := time.ParseDuration(ready)
		if ok {
			row.setFaultToFailure(gaveUp.Sub(fault))
			if gaveUp.Sub(waitAt) > readyD+10*time.Second {
				t.Errorf("the harness gave up %s after the SSH wait began, well past intervals.ssh_ready %s", gaveUp.Sub(waitAt).Round(time.Second), ready)
			}
		}
		said := mustContain(t, "console", console, `ssh to guest `+regexp.QuoteMeta(vm1.Name)+` .*not reachable within `+regexp.QuoteMeta(readyD.String()))
		mustContain(t, "harness.log", log, `^\S+ after the wait: server `+regexp.QuoteMeta(vm1.Name)+` \(`+vm1.ID+`\) is SHUTOFF`)
		row.Outcome = fmt.Sprintf("exit %d; %s; %s", code, orNone(firstMatch(said, `not reachable within \S+ \([^)]*\)(: [^;]*)?`)), orNone(explanation(log, "wait")))
		ending(t, r, row)
	})

	t.Run("concurrent/two-runs", func(t *testing.T) {
		t.Parallel()
		row := record(t, "two perf runs at once on one cloud (checks + tcp-p1 10 s each)", "whole run, twice side by side")
		// Started together, the runs could still drift apart in
		// provisioning and meet nothing of each other. Each run's first
		// server create is held at the API until both have arrived there,
		// so they boot, connect and run their evidence flows and windows
		// side by side; the row then checks from their logs that the
		// traffic did overlap.
		arrived, both := make(chan string, 2), make(chan struct{})
		released := false
		releaseBoth := func() {
			if !released {
				released = true
				close(both)
			}
		}
		hold := func(name string) *faultproxy.Injector {
			in, err := faultproxy.NewInjector(faultproxy.Plan{Rules: []faultproxy.Rule{{
				Name: "align-first-server-create", Method: "POST", Path: `/servers$`, Action: faultproxy.ActionDelay, Delay: time.Millisecond, Times: 1,
			}}}, func(faultproxy.Hit) {
				arrived <- name
				<-both
			})
			if err != nil {
				t.Fatal(err)
			}
			return in
		}
		edit := func(c map[string]any) {
			set(c, "traffic.profiles", []string{"tcp-p1"})
			set(c, "traffic.duration", "10s")
			set(c, "offload.flow_duration", "20s")
		}
		a := env.start(t, "concurrent-a", spec{suite: "perf", edit: edit, proxy: hold("concurrent-a")})
		b := env.start(t, "concurrent-b", spec{suite: "perf", edit: edit, proxy: hold("concurrent-b")})
		t.Cleanup(releaseBoth)
		for n := 0; n < 2; n++ {
			select {
			case name := <-arrived:
				t.Logf("%s: %s holds at its first server create", time.Now().UTC().Format("15:04:05"), name)
			case <-a.done:
				n = 2
			case <-b.done:
				n = 2
			case <-time.After(6 * time.Minute):
				t.Errorf("the two runs did not both reach their first server create within 6m")
				n = 2
			}
		}
		releaseBoth()
		var parts []string
		var spans [][2]time.Time
		for _, r := range []*harnessRun{a, b} {
			code := r.wait(15 * time.Minute)
			name := filepath.Base(r.dir)
			if from, to, ok := trafficSpan(r.Log()); ok {
				spans = append(spans, [2]time.Time{from, to})
			}
			if code != 0 {
				// The row's directory keeps the run's evidence.
				t.Errorf("%s exit %d (evidence in %s): %s", name, code, r.dir, excerpt(r.Console(), `\[FAILED\]`, 0, 400))
				parts = append(parts, fmt.Sprintf("%s exit %d: %s", name, code, excerpt(r.Console(), `\[FAILED\]`, 0, 200)))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s exit 0 (tcp-p1 %s)", name, orNone(firstMatch(r.Log(), `goodput [\d.]+ \S?bit/s`))))
		}
		if len(spans) == 2 {
			over := minTime(spans[0][1], spans[1][1]).Sub(maxTime(spans[0][0], spans[1][0]))
			if over <= 0 {
				t.Errorf("the two runs' traffic never overlapped (%s–%s and %s–%s): the row proved nothing",
					spans[0][0].Format("15:04:05"), spans[0][1].Format("15:04:05"), spans[1][0].Format("15:04:05"), spans[1][1].Format("15:04:05"))
			}
			parts = append(parts, fmt.Sprintf("traffic overlapped %s", over.Round(time.Second)))
		}
		row.Outcome = strings.Join(parts, "; ")
		for _, r := range []*harnessRun{a, b} {
			sub := &Row{}
			ending(t, r, sub)
			if row.Leftovers != "" {
				row.Leftovers += "; "
			}
			row.Leftovers += sub.Leftovers
			row.RunID = strings.TrimPrefix(row.RunID+" "+sub.RunID, " ")
		}
	})
}

// setFaultToFailure records the time from the fault to the failure.
func (row *Row) setFaultToFailure(d time.Duration) {
	s := d.Round(100 * time.Millisecond).Seconds()
	row.FaultToFailureSeconds = &s
}

// faultToFailure records the time from fault to the first harness.log line
// after it matching re; the row fails when there is none.
func (row *Row) faultToFailure(t *testing.T, log string, fault time.Time, re string) {
	t.Helper()
	at, _, ok := firstLogLine(log, fault, re)
	if !ok {
		t.Errorf("harness.log has no line matching %q after the fault at %s", re, fault.UTC().Format(time.RFC3339))
		return
	}
	row.setFaultToFailure(at.Sub(fault))
}

// midWindow waits until the run's iperf3 client runs and has connected
// (control connection and a stream established), lets faultLead of
// traffic pass and makes sure the client is still there: the fault that
// follows lands inside the window (a 40 s window, so there is no race to
// lose; a window already over is a failure of the row, not a pass).
func (r *harnessRun) midWindow(t *testing.T) {
	t.Helper()
	p := r.waitIperfClient(t, 8*time.Minute)
	// The process alone is not the window: on a loaded machine its control
	// connection can take seconds to come up, and a fault before that is a
	// refused connect, not a vanishing data path. Wait for the control
	// connection and a data stream, both established, from the client's
	// namespace; faultLead counts from there.
	tp := r.topology()
	dst := fmt.Sprintf("%s:%d", tp.Servers[0].DataIP, 5201)
	var conns int
	if !r.poll(2*time.Minute, func() bool {
		out, err := exec.Command("ip", "netns", "exec", p.Netns, "ss", "-Htn", "state", "established", "dst", dst).Output()
		conns = 0
		if err == nil {
			for _, l := range strings.Split(string(out), "\n") {
				if strings.TrimSpace(l) != "" {
					conns++ // one line per connection (-H: no header)
				}
			}
		}
		return conns >= 2
	}) {
		t.Fatalf("the iperf3 client (pid %d) had %d established connection(s) to %s after 2m, want its control connection and a stream", p.PID, conns, dst)
	}
	time.Sleep(faultLead)
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.PID))
	if err != nil || strings.TrimSpace(string(comm)) != "iperf3" {
		t.Fatalf("the iperf3 client (pid %d) ended within %s of its start: the window was over before the fault", p.PID, faultLead)
	}
}

// waitLogLine waits for a harness.log line matching re and returns its time.
func (r *harnessRun) waitLogLine(t *testing.T, re string, timeout time.Duration) time.Time {
	t.Helper()
	r.waitLog(re, timeout)
	at, _, ok := firstLogLine(r.Log(), time.Time{}, re)
	if !ok {
		t.Fatalf("harness.log line matching %q has no timestamp", re)
	}
	return at
}

// mgmtPortName is the harness's name of guest i's management port.
func (r *harnessRun) mgmtPortName(i int) string {
	r.findRunDir()
	return fmt.Sprintf("%s-%s-vm%d-mgmt", r.env.prefix, r.RunID, i)
}

// portIP is the first fixed IP of a port (openstack CLI, tenant).
func (e *labEnv) portIP(name string) (string, error) {
	out, err := e.openstack(context.Background(), "asap2lab", "port show "+name+" -f json -c fixed_ips")
	if err != nil {
		return "", err
	}
	var p struct {
		FixedIPs []struct {
			IP string `json:"ip_address"`
		} `json:"fixed_ips"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.FixedIPs) == 0 || p.FixedIPs[0].IP == "" {
		return "", fmt.Errorf("port %s: no fixed IP in %q (%v)", name, out, err)
	}
	return p.FixedIPs[0].IP, nil
}

// flowSet is OpenFlow rules of one row (one cookie) in br-int of both lab
// hypervisors.
type flowSet struct {
	env     *labEnv
	cookie  string
	removed bool
}

// addFlows adds each match+actions in table 0 of br-int on both
// hypervisors, above all of Neutron's flows, with the row's cookie; they
// are removed when the test ends in any case.
func (e *labEnv) addFlows(t *testing.T, cookie string, rules ...string) *flowSet {
	t.Helper()
	fs := &flowSet{env: e, cookie: cookie}
	t.Cleanup(func() { fs.remove(t) })
	for _, hv := range []string{"1", "2"} {
		for _, rule := range rules {
			flow := fmt.Sprintf("cookie=%s,table=0,priority=65535,%s", cookie, rule)
			if out, err := e.hvExec(hv, "ovs-ofctl", "-O", "OpenFlow13", "add-flow", "br-int", flow); err != nil {
				t.Fatalf("hv%s: ovs-ofctl add-flow br-int %q: %v: %s", hv, flow, err, out)
			}
		}
	}
	t.Logf("br-int of both hypervisors: %q (cookie %s)", rules, cookie)
	return fs
}

func (fs *flowSet) remove(t *testing.T) {
	t.Helper()
	if fs.removed {
		return
	}
	fs.removed = true
	for _, hv := range []string{"1", "2"} {
		if out, err := fs.env.hvExec(hv, "ovs-ofctl", "-O", "OpenFlow13", "del-flows", "br-int", "cookie="+fs.cookie+"/-1"); err != nil {
			t.Errorf("hv%s: ovs-ofctl del-flows br-int cookie=%s/-1: %v: %s", hv, fs.cookie, err, out)
		}
	}
	t.Logf("flows of cookie %s removed", fs.cookie)
}

// netnsPIDs lists the processes named comm inside network namespace netns.
func netnsPIDs(netns, comm string) []int {
	var out []int
	for _, p := range procsNamed(map[string]bool{comm: true}) {
		if p.Netns == netns {
			out = append(out, p.PID)
		}
	}
	return out
}

// frozenSSH is this run's SSH connections to one hypervisor, their sshd
// processes stopped with SIGSTOP.
type frozenSSH struct {
	pids    []int
	at      time.Time
	resumed bool
}

// freezeHypervisorSSH stops the sshd processes that serve this harness's
// connections to hypervisor hv (a name from topology.json): the harness's
// own sockets to the hypervisor's SSH address (`ss -tnp` here, by the
// harness's pid) give the local ports; inside the hypervisor's namespace,
// the sshd processes holding port 22 sockets with those peer ports are
// this run's, and only they are stopped. The listener and other runs'
// sessions go on. They are continued when the test ends in any case.
func (r *harnessRun) freezeHypervisorSSH(t *testing.T, hv string) *frozenSSH {
	t.Helper()
	addr, netns, err := r.env.hypervisorOf(hv)
	if err != nil {
		t.Fatal(err)
	}
	root, err := exec.Command("ss", "-tnp", "state", "established").Output()
	if err != nil {
		t.Fatalf("ss -tnp: %v", err)
	}
	inHV, err := exec.Command("ip", "netns", "exec", netns, "ss", "-tnp", "state", "established").Output()
	if err != nil {
		t.Fatalf("ip netns exec %s ss -tnp: %v", netns, err)
	}
	_ = os.WriteFile(filepath.Join(r.dir, "ss-root.txt"), root, 0o644)
	_ = os.WriteFile(filepath.Join(r.dir, "ss-"+netns+".txt"), inHV, 0o644)
	pids, conns := sshdServing(string(root), string(inHV), r.cmd.Process.Pid, addr)
	if len(pids) == 0 {
		t.Fatalf("no sshd in %s serves the harness (pid %d) at %s:22; ss outputs in %s", netns, r.cmd.Process.Pid, addr, r.dir)
	}
	fr := &frozenSSH{}
	t.Cleanup(func() { fr.resume(t) })
	for _, pid := range pids {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cl), "[listener]") || strings.Contains(string(cl), " -D") {
			t.Fatalf("pid %d is the sshd listener (%q): refusing to stop it", pid, cl)
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP sshd %d: %v", pid, err)
		}
		fr.pids = append(fr.pids, pid)
	}
	fr.at = time.Now()
	t.Logf("%s: stopped sshd %v in %s serving the harness's connections %v", fr.at.UTC().Format("15:04:05.000"), fr.pids, netns, conns)
	return fr
}

func (fr *frozenSSH) resume(t *testing.T) {
	if fr.resumed {
		return
	}
	fr.resumed = true
	for _, pid := range fr.pids {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
			t.Errorf("SIGCONT sshd %d: %v", pid, err)
		}
	}
	if len(fr.pids) > 0 {
		t.Logf("continued sshd %v", fr.pids)
	}
}

// hypervisorOf returns the SSH address of a lab hypervisor (from
// lab/harness.yaml) and its network namespace (computeN runs in
// asap2lab-hvN, lab/README.md).
func (e *labEnv) hypervisorOf(name string) (addr, netns string, err error) {
	var cfg struct {
		Hypervisors struct {
			Hosts map[string]struct {
				Address string `yaml:"address"`
			} `yaml:"hosts"`
		} `yaml:"hypervisors"`
	}
	if err := yaml.Unmarshal(e.base, &cfg); err != nil {
		return "", "", err
	}
	h, ok := cfg.Hypervisors.Hosts[name]
	n := strings.TrimPrefix(name, "compute")
	if !ok || h.Address == "" || n == name {
		return "", "", fmt.Errorf("hypervisor %q: not a lab hypervisor of lab/harness.yaml", name)
	}
	return h.Address, "asap2lab-hv" + n, nil
}

// --- pure helpers (tests in helpers_test.go) ---

// reBoundSaid is the harness's sentence for a command killed at its bound
// (remote.BoundError: the command quoted with %q).
const reBoundSaid = `"(?:[^"\\]|\\.)*" did not finish within \S+ \([^)]*\)`

// firstMatch is the first match of re in text, with a quoted command at
// its start cut to 60 characters ("" when nothing matches).
func firstMatch(text, re string) string {
	m := regexp.MustCompile(re).FindString(text)
	if strings.HasPrefix(m, `"`) {
		if k := strings.Index(m, `" did not finish`); k > 61 {
			m = m[:61] + "…" + m[k:]
		}
	}
	return m
}

// explanation is the harness's look at what changed after a failed
// window or wait ("after the window: …", "after the wait: …"), run ids left
// out of the names it gives.
func explanation(log, after string) string {
	_, text, ok := firstLogLine(log, time.Time{}, `^after the `+regexp.QuoteMeta(after)+`: `)
	if !ok {
		return ""
	}
	return regexp.MustCompile(`\S+-\d{8}t\d{6}-[0-9a-f]{4}-`).ReplaceAllString(text, "…-")
}

// logTimeRe is the stamp every harness.log line starts with.
var logTimeRe = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z) `)

// logLine is one stamped line of harness.log, e.g.
//
//	2026-12-02T15:08:33.58453615Z TCP 1 stream (-P1) repeat 1 FAILED: …
type logLine struct {
	At   time.Time
	Text string // without the stamp
}

// stampedLines returns the lines of harness.log that carry a time stamp.
func stampedLines(log string) []logLine {
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := logTimeRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			out = append(out, logLine{At: at, Text: line[len(m[0]):]})
		}
	}
	return out
}

// firstLogLine returns the time and text of the first harness.log line
// stamped at or after since that matches re.
func firstLogLine(log string, since time.Time, re string) (time.Time, string, bool) {
	rx := regexp.MustCompile(re)
	for _, l := range stampedLines(log) {
		if !l.At.Before(since) && rx.MatchString(l.Text) {
			return l.At, l.Text, true
		}
	}
	return time.Time{}, "", false
}

// trafficSpan is when a run had traffic on the data path: from its first
// evidence flow or window to the end of its last one.
func trafficSpan(log string) (from, to time.Time, ok bool) {
	starts := regexp.MustCompile(`^sustained \w+ flow running|, repeat \d+/\d+: .*until`)
	ends := regexp.MustCompile(`flow delivered|flow failed|repeat \d+.*(goodput|offered|FAILED)`)
	for _, l := range stampedLines(log) {
		if from.IsZero() && starts.MatchString(l.Text) {
			from = l.At
		}
		if !from.IsZero() && ends.MatchString(l.Text) {
			to = l.At
		}
	}
	return from, to, !to.IsZero()
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// teardownFailures lists the harness's teardown lines that report an
// error ("teardown: delete port N (ID): …") rather than "… deleted (0.3s)".
func teardownFailures(log string) []string {
	rx := regexp.MustCompile(`teardown: delete .*\([^)]*\): `)
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if rx.MatchString(l) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// sockLine is one established TCP socket of `ss -tnp` output.
type sockLine struct {
	Local, Peer string // address:port
	PIDs        []int
	Comms       []string
}

var ssUserRe = regexp.MustCompile(`\("([^"]*)",pid=(\d+),fd=\d+\)`)

// parseSS reads `ss -tnp [state established]` output, with or without the
// State column and header:
//
//	ESTAB 0 0 198.18.0.11:22 198.18.0.1:42690 users:(("sshd",pid=28084,fd=4))
func parseSS(out string) []sockLine {
	var socks []sockLine
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		var addrs []string
		var s sockLine
		for _, x := range f {
			switch {
			case strings.HasPrefix(x, "users:"):
				for _, m := range ssUserRe.FindAllStringSubmatch(x, -1) {
					pid, _ := strconv.Atoi(m[2])
					s.Comms, s.PIDs = append(s.Comms, m[1]), append(s.PIDs, pid)
				}
			case strings.LastIndexByte(x, ':') > 0:
				if _, err := strconv.Atoi(x[strings.LastIndexByte(x, ':')+1:]); err == nil {
					addrs = append(addrs, x)
				}
			}
		}
		if len(addrs) != 2 {
			continue // the header ("Local Address:Port") or not a socket
		}
		s.Local, s.Peer = addrs[0], addrs[1]
		socks = append(socks, s)
	}
	return socks
}

// sshdServing finds the sshd processes that serve client pid's SSH
// connections to addr:22: rootSS is `ss -tnp` where the client runs (its
// sockets to addr:22 give the local ports), hvSS is `ss -tnp` inside the
// server's namespace (sockets on :22 whose peer port is one of those). It
// returns the sshd pids and the connections ("198.18.0.1:42690") they serve.
func sshdServing(rootSS, hvSS string, pid int, addr string) ([]int, []string) {
	ports := map[string]bool{}
	for _, s := range parseSS(rootSS) {
		if s.Peer != addr+":22" {
			continue
		}
		for _, p := range s.PIDs {
			if p == pid {
				ports[s.Local[strings.LastIndexByte(s.Local, ':')+1:]] = true
			}
		}
	}
	seen := map[int]bool{}
	var pids []int
	var conns []string
	for _, s := range parseSS(hvSS) {
		if s.Local != addr+":22" || !ports[s.Peer[strings.LastIndexByte(s.Peer, ':')+1:]] {
			continue
		}
		conns = append(conns, s.Peer)
		for i, p := range s.PIDs {
			if s.Comms[i] == "sshd" && !seen[p] {
				seen[p] = true
				pids = append(pids, p)
			}
		}
	}
	sort.Ints(pids)
	return pids, conns
}

// cmdEntry is one line of the harness's commands.jsonl.
type cmdEntry struct {
	Target string
	Cmd    string
	Error  string
	End    time.Time
}

// failedCommands returns, ordered by the time they ended, the commands of
// the targets whose name starts with target (e.g. "hypervisor compute1 ")
// that ended at or after since with a transport error or a cancellation
// (the "error" field of commands.jsonl):
//
//	{"target":"hypervisor compute1 (198.18.0.11)","cmd":"tc -s -j filter show …","start":"…","duration_seconds":69.0,"exit_code":-1,"error":"… stopped: context deadline exceeded …"}
func failedCommands(jsonl []byte, target string, since time.Time) []cmdEntry {
	var out []cmdEntry
	sc := bufio.NewScanner(strings.NewReader(string(jsonl)))
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() {
		var e struct {
			Target   string    `json:"target"`
			Cmd      string    `json:"cmd"`
			Start    time.Time `json:"start"`
			Duration float64   `json:"duration_seconds"`
			Error    string    `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Error == "" || !strings.HasPrefix(e.Target, target) {
			continue
		}
		end := e.Start.Add(time.Duration(e.Duration * float64(time.Second)))
		if !end.Before(since) {
			out = append(out, cmdEntry{Target: e.Target, Cmd: e.Cmd, Error: e.Error, End: end})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].End.Before(out[j].End) })
	return out
}
