package faultlab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
)

// Spec is one harness run of a row.
type Spec struct {
	Suite  string // smoke | perf
	Labels string // Ginkgo label filter ("" = all)
	// Edit changes the run's config (a copy of lab/harness.yaml).
	Edit  func(cfg map[string]any)
	Proxy *faultproxy.Injector // nil = no proxy
	// OutputDir is the run's run.output_dir ("" = out/ in the row's
	// directory), e.g. a small file system of the row's (SmallFS).
	OutputDir string
}

// Run is a started harness subprocess.
type Run struct {
	t       testing.TB
	env     *Env
	Dir     string // the row's directory
	OutDir  string // run.output_dir
	CfgPath string
	console string
	cmd     *exec.Cmd
	started time.Time
	before  map[int]bool // tool PIDs alive before the run
	done    chan struct{}
	waitErr error
	runDir  string
	RunID   string
}

// Set sets the value at a dotted path of a config, creating the maps on
// the way.
func Set(cfg map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	m := cfg
	for _, k := range keys[:len(keys)-1] {
		next, _ := m[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// Start writes the row's config and starts the suite binary.
func (e *Env) Start(t testing.TB, name string, sp Spec) *Run {
	t.Helper()
	dir := filepath.Join(e.Out, "rows", name)
	if err := os.RemoveAll(dir); err != nil { // a previous matrix in the same place
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(e.Base, &cfg); err != nil {
		t.Fatal(err)
	}
	r := &Run{t: t, env: e, Dir: dir, OutDir: filepath.Join(dir, "out"), CfgPath: filepath.Join(dir, "harness.yaml"),
		console: filepath.Join(dir, "console.log"), done: make(chan struct{})}
	if sp.OutputDir != "" {
		r.OutDir = sp.OutputDir
	}
	// Small guests: the matrix runs rows side by side on two hypervisors.
	Set(cfg, "run.output_dir", r.OutDir)
	Set(cfg, "run.build_label", "fault matrix: "+name)
	Set(cfg, "flavor.name", "faults")
	Set(cfg, "flavor.vcpus", 2)
	Set(cfg, "flavor.ram_mb", 1024)
	Set(cfg, "traffic.profiles", []string{"tcp-p1", "udp-b0-p1"})
	Set(cfg, "traffic.duration", "4s")
	Set(cfg, "traffic.repeats", 1)
	if sp.Edit != nil {
		sp.Edit(cfg)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.CfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-ginkgo.v", "-ginkgo.no-color", "-ginkgo.junit-report=" + filepath.Join(dir, "junit.xml"), "-test.timeout=" + SuiteTimeout.String()}
	if sp.Labels != "" {
		args = append(args, "-ginkgo.label-filter="+sp.Labels)
	}
	r.cmd = exec.Command(e.bins[sp.Suite], args...)
	r.cmd.Dir = dir
	r.cmd.Env = append(cleanEnv(), "ASAP2E2E_CONFIG="+r.CfgPath, "OS_CLIENT_CONFIG_FILE="+e.genClouds, "OS_CLIENT_SECURE_FILE="+e.genSecure)
	if sp.Proxy != nil {
		u, stop, err := (&faultproxy.Proxy{Injector: sp.Proxy}).Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = stop() })
		r.cmd.Env = append(r.cmd.Env, "HTTP_PROXY="+u, "http_proxy="+u)
	}
	f, err := os.Create(r.console)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = f, f
	r.before = toolPIDs()
	r.started = time.Now()
	OwnGroup(r.cmd)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	Started.Add("harness of row "+name, r.cmd.Process.Pid, r.done)
	go func() {
		r.waitErr = r.cmd.Wait()
		f.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default: // a failed row: do not leave the harness running
			_ = r.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-r.done:
			case <-time.After(InterruptGrace):
				_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) // its group: all it started
			}
		}
	})
	return r
}

// Done is closed when the harness has exited.
func (r *Run) Done() <-chan struct{} { return r.done }

// PID is the harness process's id.
func (r *Run) PID() int { return r.cmd.Process.Pid }

// RunDir is the run's artifacts directory ("" before harness.log exists).
func (r *Run) RunDir() string {
	r.FindRunDir()
	return r.runDir
}

// Poll calls cond every PollEvery until it is true, the harness exited
// (then once more) or timeout passed.
func (r *Run) Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-r.done:
			return cond()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// FindRunDir fills RunID and the run directory once harness.log exists.
func (r *Run) FindRunDir() bool {
	if r.runDir != "" {
		return true
	}
	ents, _ := os.ReadDir(r.OutDir)
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(r.OutDir, e.Name(), "harness.log")); err == nil {
				r.runDir, r.RunID = filepath.Join(r.OutDir, e.Name()), e.Name()
				return true
			}
		}
	}
	return false
}

// Log is harness.log so far.
func (r *Run) Log() string {
	if !r.FindRunDir() {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(r.runDir, "harness.log"))
	return string(b)
}

// APILog is the run's api.log so far (every cloud request, logged when its
// answer came; InFlight reads it).
func (r *Run) APILog() string {
	if !r.FindRunDir() {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(r.runDir, "api.log"))
	return string(b)
}

// Console is the subprocess's stdout+stderr so far.
func (r *Run) Console() string {
	b, _ := os.ReadFile(r.console)
	return string(b)
}

// WaitLog waits until harness.log matches re; it fails the row when the
// phase never began.
func (r *Run) WaitLog(re string, timeout time.Duration) {
	r.t.Helper()
	rx := regexp.MustCompile(re)
	if !r.Poll(timeout, func() bool { return rx.MatchString(r.Log()) }) {
		r.t.Fatalf("the phase never began: harness.log did not match %q within %s (exited: %v)\nlog tail:\n%s", re, timeout, r.Exited(), Tail(r.Log(), 15))
	}
}

// WaitLogLine waits for a harness.log line matching re and returns its time.
func (r *Run) WaitLogLine(t testing.TB, re string, timeout time.Duration) time.Time {
	t.Helper()
	r.WaitLog(re, timeout)
	at, _, ok := FirstLogLine(r.Log(), time.Time{}, re)
	if !ok {
		t.Fatalf("harness.log line matching %q has no timestamp", re)
	}
	return at
}

// Exited tells whether the harness has exited.
func (r *Run) Exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the harness.
func (r *Run) Signal(sig os.Signal) {
	r.t.Helper()
	r.t.Logf("%s: sending %s to the harness (pid %d)", time.Now().Format("15:04:05"), sig, r.cmd.Process.Pid)
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signal %s: %v", sig, err)
	}
}

// Wait waits for the harness to exit and returns its exit code (-1 when
// killed by a signal).
func (r *Run) Wait(timeout time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		r.t.Fatalf("the harness did not exit within %s after the fault", timeout)
	}
	var ee *exec.ExitError
	if errors.As(r.waitErr, &ee) {
		return ee.ExitCode()
	}
	if r.waitErr != nil {
		r.t.Fatalf("waiting for the harness: %v", r.waitErr)
	}
	return 0
}

// Topology reads topology.json of the run (nil before provisioning saved it).
func (r *Run) Topology() *Topo {
	if !r.FindRunDir() {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(r.runDir, "topology.json"))
	if err != nil {
		return nil
	}
	var tp Topo
	if json.Unmarshal(b, &tp) != nil {
		return nil
	}
	tp.lab = r.env.Lab
	return &tp
}

// Topo is the part of a run's topology.json the rows use.
type Topo struct {
	Servers []struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Hypervisor string `json:"hypervisor"`
		DataIP     string `json:"data_ip"`
		DataMAC    string `json:"data_mac"`
		DataPortID string `json:"data_port_id"`
	} `json:"servers"`
	lab *Lab
}

// GuestNetns is the network namespace of guest i ("" when unknown).
func (tp *Topo) GuestNetns(i int) string {
	if tp == nil || i >= len(tp.Servers) || tp.lab == nil {
		return ""
	}
	return tp.lab.GuestNetns(tp.Servers[i].ID)
}

// Orphans lists tool processes started since the run began that belong to
// it (belongsTo).
func (r *Run) Orphans(tp *Topo) []Proc {
	if tp == nil {
		return nil
	}
	var marks []string
	ns := map[string]bool{}
	for i, s := range tp.Servers {
		ns[tp.GuestNetns(i)] = true
		marks = append(marks, s.DataMAC, s.DataIP+" ")
	}
	prefix := ""
	if tp.lab != nil {
		prefix = tp.lab.GuestNetnsPrefix
	}
	var out []Proc
	for _, p := range Procs() {
		if !r.before[p.PID] && belongsTo(p, prefix, ns, marks) {
			out = append(out, p)
		}
	}
	return out
}

// belongsTo tells whether p is one of a run's: in one of its guests'
// namespaces (ns), or, outside every guest's (a hypervisor's capture, a
// process whose guest's namespace is deleted already), naming one of its
// guests' MACs or data addresses (marks). A process in another guest's
// namespace is that guest's run's, whatever it names: the rows run side by
// side, each run's tenant network has the same addresses, and a data
// address is no mark of one run (CI, 2026-12-07: signal/ssh-wait-SIGINT's
// run was blamed for the iperf3 server and client of
// hypervisor/ssh-frozen-in-checks' window, running in that row's guests,
// because a server of each run had 198.18.10.19).
func belongsTo(p Proc, guestPrefix string, ns map[string]bool, marks []string) bool {
	if ns[p.Netns] {
		return true
	}
	if guestPrefix != "" && strings.HasPrefix(p.Netns, guestPrefix) {
		return false
	}
	for _, m := range marks {
		if m != "" && m != " " && strings.Contains(p.Cmdline+" ", m) {
			return true
		}
	}
	return false
}

// SecretsFound searches every file of the row (config, console, JUnit,
// harness.log, api.log, commands, results, reports, evidence) for the
// credentials the run was given.
func (r *Run) SecretsFound() []string { return r.env.SecretsFound(r.Dir) }

// Sweep runs the sweeper on the run (dry run unless del) and returns its
// exit code and stderr.
func (r *Run) Sweep(del bool) (int, string) {
	args := []string{"--config", r.CfgPath, "--run-id", r.RunID}
	if del {
		args = append(args, "--delete")
	}
	cmd := exec.Command(r.env.bins["sweeper"], args...)
	cmd.Env = append(cleanEnv(), "OS_CLIENT_CONFIG_FILE="+r.env.genClouds, "OS_CLIENT_SECURE_FILE="+r.env.genSecure)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	_ = os.WriteFile(filepath.Join(r.Dir, fmt.Sprintf("sweeper-delete-%v.json", del)), stdout.Bytes(), 0o644)
	_ = os.WriteFile(filepath.Join(r.Dir, fmt.Sprintf("sweeper-delete-%v.log", del)), stderr.Bytes(), 0o644)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, stderr.String()
}

// WaitIperfClient waits until the run's iperf3 client runs (a traffic
// window has begun) and returns it.
func (r *Run) WaitIperfClient(t testing.TB, timeout time.Duration) Proc {
	t.Helper()
	var got Proc
	if !r.Poll(timeout, func() bool {
		tp := r.Topology()
		if tp == nil || len(tp.Servers) < 2 {
			return false
		}
		for _, p := range Procs() {
			if p.Comm == "iperf3" && strings.Contains(p.Cmdline, "-c "+tp.Servers[0].DataIP) {
				got = p
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no iperf3 client of the run appeared within %s; log tail:\n%s", timeout, Tail(r.Log(), 10))
	}
	return got
}

// MidWindow waits until the run's iperf3 client runs and has connected
// (control connection and a stream established), lets FaultLead of
// traffic pass and makes sure the client is still there: the fault that
// follows lands inside the window (a 40 s window, so there is no race to
// lose; a window already over is a failure of the row, not a pass). The
// run's iperf3 server listens on the lab's traffic.port.
func (r *Run) MidWindow(t testing.TB) {
	t.Helper()
	p := r.WaitIperfClient(t, ReachTraffic)
	// The process alone is not the window: on a loaded machine its control
	// connection can take seconds to come up, and a fault before that is a
	// refused connect, not a vanishing data path. Wait for the control
	// connection and a data stream, both established, from the client's
	// namespace; FaultLead counts from there.
	tp := r.Topology()
	dst := fmt.Sprintf("%s:%d", tp.Servers[0].DataIP, r.env.TrafficPort)
	var conns int
	if !r.Poll(Connected, func() bool {
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
		t.Fatalf("the iperf3 client (pid %d) had %d established connection(s) to %s after %s, want its control connection and a stream", p.PID, conns, dst, Connected)
	}
	time.Sleep(FaultLead)
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.PID))
	if err != nil || strings.TrimSpace(string(comm)) != "iperf3" {
		t.Fatalf("the iperf3 client (pid %d) ended within %s of its start: the window was over before the fault", p.PID, FaultLead)
	}
}

// Occupy connects a long iperf3 test to the harness's server from inside
// netns, retrying while the server is not listening yet, and returns once
// the connection holds the server; the process is this test's child,
// ended by PID when the row ends. The caller makes sure the harness's own
// client cannot arrive first (see GatePort).
func (r *Run) Occupy(t testing.TB, netns, addr string, port int) {
	t.Helper()
	deadline := time.Now().Add(OccupyWithin)
	for attempt := 1; time.Now().Before(deadline); attempt++ {
		argv := append([]string{"netns", "exec", netns}, r.env.CommandPrefix...)
		argv = append(argv, "iperf3", "-c", addr, "-p", strconv.Itoa(port), "-t", "60", "--connect-timeout", strconv.Itoa(OccupyConnectMs))
		cmd := exec.Command("ip", argv...)
		f, err := os.Create(filepath.Join(r.Dir, fmt.Sprintf("stray-client-%d.log", attempt)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		OwnGroup(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		Started.Add("stray iperf3 client", cmd.Process.Pid, exited)
		go func() { _ = cmd.Wait(); f.Close(); close(exited) }()
		select {
		case <-exited: // refused: the server does not listen yet
			time.Sleep(OccupyRetry)
			continue
		case <-time.After(OccupyHeld):
			t.Logf("stray iperf3 client (pid %d) occupies %s:%d", cmd.Process.Pid, addr, port)
			t.Cleanup(func() {
				select {
				case <-exited:
				default:
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return
		}
	}
	t.Fatalf("could not occupy the harness's iperf3 server at %s:%d from %s; the stray client's logs are in %s", addr, port, netns, r.Dir)
}

// MgmtPortName is the harness's name of guest i's management port.
func (r *Run) MgmtPortName(i int) string {
	r.FindRunDir()
	return fmt.Sprintf("%s-%s-vm%d-mgmt", r.env.Prefix, r.RunID, i)
}
