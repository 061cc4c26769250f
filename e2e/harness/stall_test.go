package harness

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// The look after a failed window (stall.go; iperf3.DescribeDataStop): the client's
// last data from its own JSON, recorded (e2e/iperf3/testdata/stall/README.md), and
// what the cloud and the management path say, from a fake witness.

// stallJSON is a client whose path was cut mid-test
// (e2e/iperf3/testdata/stall/README.md).
func stallJSON(t testing.TB, name string) []byte {
	return readFile(t, filepath.Join("..", "iperf3", "testdata", "stall", name))
}

// vswitchdRecording is one of offload.VswitchdCommand's recorded outputs
// (e2e/offload/testdata/vswitchd/README.md).
func vswitchdRecording(t testing.TB, name string) string {
	t.Helper()
	return string(readFile(t, filepath.Join("..", "offload", "testdata", "vswitchd", name)))
}

func iperfJSON(t testing.TB, name string) []byte {
	return readFile(t, filepath.Join("..", "iperf3", "testdata", name))
}

// fakeWitness answers from maps; an id it does not know is gone (404).
type fakeWitness struct {
	servers map[string]fixtures.ServerState
	ports   map[string]fixtures.PortState
	errs    map[string]error // by server id, port id or address
	block   bool             // every answer waits for the look's bound
}

func (f *fakeWitness) answer(ctx context.Context, key string) error {
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.errs[key]
}

// known answers with m[id], or errGone for an id m does not hold.
func known[T any](ctx context.Context, f *fakeWitness, m map[string]T, id string) (T, error) {
	var zero T
	if err := f.answer(ctx, id); err != nil {
		return zero, err
	}
	v, ok := m[id]
	if !ok {
		return zero, errGone
	}
	return v, nil
}

func (f *fakeWitness) Server(ctx context.Context, id string) (fixtures.ServerState, error) {
	return known(ctx, f, f.servers, id)
}

func (f *fakeWitness) Port(ctx context.Context, id string) (fixtures.PortState, error) {
	return known(ctx, f, f.ports, id)
}

func (f *fakeWitness) Answers(ctx context.Context, _ int, addr string) error {
	return f.answer(ctx, addr)
}

// healthyWitness says every server of topo is ACTIVE where the topology
// put it, every port ACTIVE and bound there, every guest answers.
func healthyWitness(topo *fixtures.Topology) *fakeWitness {
	f := &fakeWitness{servers: map[string]fixtures.ServerState{}, ports: map[string]fixtures.PortState{}, errs: map[string]error{}}
	for _, s := range topo.Servers {
		f.servers[s.ID] = fixtures.ServerState{Status: "ACTIVE", Host: s.Hypervisor, Hypervisor: s.Hypervisor, HostID: s.HostID}
		for _, id := range []string{s.DataPortID, s.ManagementPortID} {
			if id != "" {
				f.ports[id] = fixtures.PortState{Status: "ACTIVE", Binding: true, HostID: s.Hypervisor, VIFType: "ovs"}
			}
		}
	}
	return f
}

const (
	vm0ID, vm1ID         = "0d1c6a52-51b7-4c8e-9a55-7f4e3c2b1a00", "0d1c6a52-51b7-4c8e-9a55-7f4e3c2b1a01"
	vm0Data, vm1Data     = "e503d1a4-7c2b-4f5e-8a1d-3b9c0e6f2a10", "e503d1a4-7c2b-4f5e-8a1d-3b9c0e6f2a11"
	vm0Mgmt, vm1Mgmt     = "a7f0c2d9-1e3b-4c5a-9d8e-6b2f4a1c0e20", "a7f0c2d9-1e3b-4c5a-9d8e-6b2f4a1c0e21"
	vm0Access, vm1Access = "198.19.128.10:22", "198.19.128.11:22"
)

// stallTopology is a provisioned pair as Provision records it: vm0 serves
// on compute1, vm1 sends from compute2; the ports' names are in Resources.
func stallTopology() *fixtures.Topology {
	topo := &fixtures.Topology{RunID: "20261202t155700-3fa2", Prefix: "asap2e2e", Servers: []fixtures.Server{
		{ID: vm0ID, Name: "asap2e2e-20261202t155700-3fa2-vm0", Hypervisor: "compute1", HostID: "5f1d",
			ManagementPortID: vm0Mgmt, ManagementIP: "198.19.128.10", DataPortID: vm0Data, DataIP: "198.18.10.10"},
		{ID: vm1ID, Name: "asap2e2e-20261202t155700-3fa2-vm1", Hypervisor: "compute2", HostID: "9a2e",
			ManagementPortID: vm1Mgmt, ManagementIP: "198.19.128.11", DataPortID: vm1Data, DataIP: "198.18.10.11"},
	}}
	for i, s := range topo.Servers {
		topo.Resources = append(topo.Resources,
			fixtures.Resource{Kind: fixtures.KindPort, ID: s.ManagementPortID, Name: s.Name + "-mgmt"},
			fixtures.Resource{Kind: fixtures.KindPort, ID: s.DataPortID, Name: s.Name + "-data"},
			fixtures.Resource{Kind: fixtures.KindServer, ID: s.ID, Name: topo.Servers[i].Name})
	}
	return topo
}

func stallPair(t *testing.T, topo *fixtures.Topology, w witness, console *bytes.Buffer) *Pair {
	t.Helper()
	dir := t.TempDir()
	res, err := results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{RunID: topo.RunID, StartedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Intervals: map[string]wait.Interval{
		config.IntervalCommand: {Timeout: 200 * time.Millisecond, Poll: 10 * time.Millisecond},
	}}
	run := &Run{Config: cfg, RunID: topo.RunID, Dir: dir, Results: res, console: console}
	s := run.singlePair()
	s.Topology, s.witness = topo, w
	return s
}

func TestAfterWindowExplains(t *testing.T) {
	cut := iperf3.Measurement{Processes: []iperf3.ProcessRun{{ClientJSON: stallJSON(t, "v3.12-tcp-p1-path-cut.json")}}}
	orig := &iperf3.IperfError{Message: "unable to send control message: Broken pipe"}
	vm0, vm1 := "asap2e2e-20261202t155700-3fa2-vm0", "asap2e2e-20261202t155700-3fa2-vm1"
	stopped := "iperf3 client on " + vm1 + " stopped receiving at 15:57:11"
	healthy := "servers ACTIVE on their hosts, ports ACTIVE and bound, both guests answer SSH"
	for _, tc := range []struct {
		name   string
		change func(f *fakeWitness)
		m      iperf3.Measurement
		// want: the whole "after the window" part; or, when wantParts is set,
		// substrings of it.
		want      string
		wantParts []string
		notWant   []string
		damaged   bool
	}{
		{name: "nothing abnormal", m: cut, want: healthy + "; " + stopped},
		{name: "nothing abnormal, no client JSON", want: healthy},
		{name: "data port gone (404)", m: cut, change: func(f *fakeWitness) { delete(f.ports, vm0Data) },
			want: "data port " + vm0 + "-data (" + vm0Data + ") no longer exists; " + stopped, damaged: true},
		{name: "data port DOWN", change: func(f *fakeWitness) {
			f.ports[vm1Data] = fixtures.PortState{Status: "DOWN", Binding: true, HostID: "compute2", VIFType: "ovs"}
		},
			want: "data port " + vm1 + "-data (" + vm1Data + ") is DOWN", damaged: true},
		{name: "data port unbound", change: func(f *fakeWitness) {
			f.ports[vm0Data] = fixtures.PortState{Status: "DOWN", Binding: true, VIFType: "unbound"}
		},
			want: "data port " + vm0 + "-data (" + vm0Data + ") is DOWN; data port " + vm0 + "-data (" + vm0Data + `) is unbound (binding:vif_type "unbound", binding:host_id "")`, damaged: true},
		{name: "data port binding failed", change: func(f *fakeWitness) {
			f.ports[vm0Data] = fixtures.PortState{Status: "ACTIVE", Binding: true, HostID: "compute1", VIFType: "binding_failed"}
		}, wantParts: []string{"data port " + vm0 + "-data (" + vm0Data + ") is unbound", `"binding_failed"`}, damaged: true},
		{name: "data port bound elsewhere", change: func(f *fakeWitness) {
			f.ports[vm0Data] = fixtures.PortState{Status: "ACTIVE", Binding: true, HostID: "compute2", VIFType: "ovs"}
		},
			want: "data port " + vm0 + "-data (" + vm0Data + ") is bound to compute2, not to its server's host compute1", damaged: true},
		{name: "management port gone", change: func(f *fakeWitness) { delete(f.ports, vm1Mgmt) },
			want: "management port " + vm1 + "-mgmt (" + vm1Mgmt + ") no longer exists", damaged: true},
		{name: "server in ERROR", change: func(f *fakeWitness) {
			f.servers[vm0ID] = fixtures.ServerState{Status: "ERROR", Host: "compute1", Hypervisor: "compute1", Fault: "Instance failed: libvirt crashed"}
		}, want: "server " + vm0 + " (" + vm0ID + ") is ERROR: Instance failed: libvirt crashed", damaged: true},
		{name: "server in ERROR with its cause", change: func(f *fakeWitness) {
			f.servers[vm0ID] = fixtures.ServerState{Status: "ERROR", Host: "compute1", Hypervisor: "compute1", Fault: "Instance failed: libvirt crashed",
				Cause: "compute host compute1 (hypervisor compute1); instance action reboot (req-1): event compute_reboot_instance on compute1: Error: libvirt crashed"}
		}, want: "server " + vm0 + " (" + vm0ID + ") is ERROR: Instance failed: libvirt crashed; compute host compute1 (hypervisor compute1); instance action reboot (req-1): event compute_reboot_instance on compute1: Error: libvirt crashed", damaged: true},
		{name: "server SHUTOFF", change: func(f *fakeWitness) {
			f.servers[vm1ID] = fixtures.ServerState{Status: "SHUTOFF", Host: "compute2", Hypervisor: "compute2"}
		},
			want: "server " + vm1 + " (" + vm1ID + ") is SHUTOFF", damaged: true},
		{name: "server moved", change: func(f *fakeWitness) {
			f.servers[vm1ID] = fixtures.ServerState{Status: "ACTIVE", Host: "compute1", Hypervisor: "compute1"}
			f.ports[vm1Data] = fixtures.PortState{Status: "ACTIVE", Binding: true, HostID: "compute1", VIFType: "ovs"}
			f.ports[vm1Mgmt] = f.ports[vm1Data]
		}, want: "server " + vm1 + " (" + vm1ID + ") moved from compute2 to compute1", damaged: true},
		{name: "server moved, tenant view", change: func(f *fakeWitness) {
			f.servers[vm1ID] = fixtures.ServerState{Status: "ACTIVE", HostID: "5f1d"}
		}, wantParts: []string{"server " + vm1 + " (" + vm1ID + ") moved from host 9a2e to host 5f1d"}, damaged: true},
		{name: "server gone", change: func(f *fakeWitness) { delete(f.servers, vm0ID) },
			wantParts: []string{"server " + vm0 + " (" + vm0ID + ") no longer exists"}, notWant: []string{"bound to"}, damaged: true},
		{name: "guest does not answer", m: cut, change: func(f *fakeWitness) { f.errs[vm0Access] = syscall.ECONNREFUSED },
			want: "guest " + vm0 + " does not answer on its management address " + vm0Access + ": connection refused; " + stopped, damaged: true},
		{name: "bindings not visible (tenant)", change: func(f *fakeWitness) {
			for id := range f.ports {
				f.ports[id] = fixtures.PortState{Status: "ACTIVE"}
			}
		}, want: "servers ACTIVE on their hosts, ports ACTIVE (bindings not visible without cloud.admin), both guests answer SSH"},
		{name: "look-up fails", m: cut, change: func(f *fakeWitness) { f.errs[vm1ID] = errors.New("Internal Server Error (500)") },
			want: "nothing abnormal in what could be read; could not read server " + vm1 + " (" + vm1ID + "): Internal Server Error (500); " + stopped},
		{name: "look-up fails beside a finding", change: func(f *fakeWitness) {
			f.errs[vm1Data] = errors.New("Service Unavailable (503)")
			delete(f.ports, vm0Data)
		}, want: "data port " + vm0 + "-data (" + vm0Data + ") no longer exists; could not read data port " + vm1 + "-data (" + vm1Data + "): Service Unavailable (503)", damaged: true},
		{name: "look exceeds its bound", m: cut, change: func(f *fakeWitness) { f.block = true },
			want: "nothing abnormal in what could be read; the look stopped at its bound (intervals.command, 200ms) with no answer about server " +
				vm0 + " (" + vm0ID + "), data port " + vm0 + "-data (" + vm0Data + "), management port " + vm0 + "-mgmt (" + vm0Mgmt + "), guest " +
				vm0 + " on " + vm0Access + ", server " + vm1 + " (" + vm1ID + "), data port " + vm1 + "-data (" + vm1Data + "), management port " +
				vm1 + "-mgmt (" + vm1Mgmt + "), guest " + vm1 + " on " + vm1Access + "; " + stopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := stallTopology()
			f := healthyWitness(topo)
			if tc.change != nil {
				tc.change(f)
			}
			var console bytes.Buffer
			s := stallPair(t, topo, f, &console)
			start := time.Now()
			err := s.explainFailure(context.Background(), "tcp-p1 repeat 1", tc.m, orig)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the look took %s, bound 200ms", d)
			}
			if !errors.Is(err, orig) {
				t.Errorf("the original error left the chain: %v", err)
			}
			msg := err.Error()
			prefix := orig.Error() + "; after the window: "
			if !strings.HasPrefix(msg, prefix) {
				t.Fatalf("got %q, want it to start with %q", msg, prefix)
			}
			why := strings.TrimPrefix(msg, prefix)
			if tc.want != "" && why != tc.want {
				t.Errorf("after the window:\n got  %q\n want %q", why, tc.want)
			}
			for _, w := range tc.wantParts {
				if !strings.Contains(why, w) {
					t.Errorf("%q lacks %q", why, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(why, w) {
					t.Errorf("%q has %q", why, w)
				}
			}
			if !strings.Contains(console.String(), "] after the window: "+why+"\n") {
				t.Errorf("no log line of its own: %q", console.String())
			}
			if got := s.damage != ""; got != tc.damaged {
				t.Errorf("damaged = %t, want %t (%q)", got, tc.damaged, s.damage)
			}
		})
	}
}

func TestAfterWindowNotOnCancelledRun(t *testing.T) {
	topo := stallTopology()
	f := healthyWitness(topo)
	f.block = true
	var console bytes.Buffer
	s := stallPair(t, topo, f, &console)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	orig := errors.New("context canceled")
	if err := s.explainFailure(ctx, "tcp-p1 repeat 1", iperf3.Measurement{}, orig); err != orig {
		t.Errorf("an interrupted run looked anyway: %v", err)
	}
	if console.Len() != 0 {
		t.Errorf("logged %q", console.String())
	}
}

// The whole path through RunProfile: a repeat whose data port vanished
// fails with the iperf3 error and the look's findings, in the error, the
// log and the results file (which the report renders: e2e/report's
// TestMarkdownErrorsSection); the remaining repeats and later windows are
// not started on the damaged topology, and the results file says so.
func TestRunProfileExplainsAFailedRepeat(t *testing.T) {
	wd := newPair(t)
	wd.cfg.Traffic.Duration = time.Second
	wd.cfg.Traffic.Repeats = 3
	wd.cfg.Intervals[config.IntervalCommand] = wait.Interval{Timeout: time.Second, Poll: 10 * time.Millisecond}
	cut := stallJSON(t, "v3.12-tcp-p1-path-cut.json")
	wd.guests[1].Play.Client = fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: cut} })
	wd.topo.Resources = []fixtures.Resource{{Kind: fixtures.KindPort, ID: wd.topo.Servers[0].DataPortID, Name: "asap2e2e-r1-vm0-data"}}
	wd.topo.Servers[0].ID, wd.topo.Servers[1].ID = vm0ID, vm1ID
	wd.answerCoverage(t)
	s := wd.session()
	f := healthyWitness(wd.topo)
	delete(f.ports, wd.topo.Servers[0].DataPortID)
	s.witness = f

	p, _ := iperf3.Lookup("tcp-p1")
	pr, err := s.RunProfile(context.Background(), p)
	want := "tcp-p1 repeat 1: iperf3 run tcp-p1: guest asap2e2e-client: port 5201: iperf3 reported: control socket has closed unexpectedly; after the window: data port asap2e2e-r1-vm0-data (" +
		wd.topo.Servers[0].DataPortID + ") no longer exists; iperf3 client on asap2e2e-client stopped receiving at 15:57:11" +
		"; OVS counted drops during the window: " + hvNames[1] + " drop_action_of_pipeline 22"
	if err == nil || err.Error() != want {
		t.Fatalf("RunProfile:\n got  %v\n want %s", err, want)
	}
	if len(pr.Runs) != 1 || pr.Runs[0].Error != strings.TrimPrefix(want, "tcp-p1 repeat 1: ") {
		t.Errorf("runs = %+v", pr.Runs)
	}
	// The look asked both hypervisors' ovs-vswitchd (they answer: nothing
	// added), once each, only after the client's window had closed (the
	// coverage readings are drops.go's, before and after the window).
	_, ends := wd.world.Clients()
	if len(ends) != 1 {
		t.Fatalf("client returns %v, want one", ends)
	}
	var asked []string
	for _, e := range wd.world.Log() {
		if strings.HasPrefix(e.Cmd, "ovs-appctl --timeout=") && !strings.HasSuffix(e.Cmd, "coverage/show") {
			asked = append(asked, e.Runner)
			if e.At.Before(ends[0]) {
				t.Errorf("%s was asked about ovs-vswitchd at %s, before the window closed (%s)", e.Runner, e.At.Format("15:04:05.000"), ends[0].Format("15:04:05.000"))
			}
		}
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"hypervisor " + hvNames[0], "hypervisor " + hvNames[1]}) {
		t.Errorf("asked %q about ovs-vswitchd, want both hypervisors once", asked)
	}
	if !strings.Contains(wd.console.String(), "tcp-p1: repeats 2..3 not run: the topology is damaged") {
		t.Errorf("log: %s", wd.console.String())
	}

	p15, _ := iperf3.Lookup("tcp-p15")
	_, err = s.RunProfile(context.Background(), p15)
	notRun := "tcp-p15: not run: the topology was damaged during tcp-p1 repeat 1 (data port asap2e2e-r1-vm0-data (" + wd.topo.Servers[0].DataPortID + ") no longer exists)"
	if err == nil || err.Error() != notRun {
		t.Errorf("a window on the damaged topology: %v", err)
	}
	if _, err := s.RunOffloadChecks(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "the offload checks: not run: ") {
		t.Errorf("offload checks on the damaged topology: %v", err)
	}

	res, err := results.Load(filepath.Join(s.Dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Profiles) != 1 || len(res.Errors) != 2 || res.Errors[0] != notRun {
		t.Errorf("results: %d profiles, errors %q", len(res.Profiles), res.Errors)
	}
	if runs := res.Profiles[0].Runs; len(runs) != 1 || runs[0].Error != pr.Runs[0].Error {
		t.Errorf("results file runs = %+v, want the repeat's error", runs)
	}
}

// A guest that never answers SSH because its server stopped: the failed
// wait says so, on a line of its own, and the topology counts as damaged.
func TestExplainWaitNamesAStoppedServer(t *testing.T) {
	topo := stallTopology()
	f := healthyWitness(topo)
	srv := topo.Servers[1]
	now := f.servers[srv.ID]
	now.Status = "SHUTOFF"
	f.servers[srv.ID] = now
	f.errs[net.JoinHostPort(srv.AccessIP(), strconv.Itoa(guestSSHPort))] = errors.New("connection refused")
	var console bytes.Buffer
	s := stallPair(t, topo, f, &console)
	orig := errors.New("ssh to guest: not reachable within 10m0s")
	err := s.explainWait(context.Background(), "the SSH wait", orig)
	if !errors.Is(err, orig) {
		t.Fatalf("the original error left the chain: %v", err)
	}
	for _, want := range []string{
		orig.Error() + "; after the wait: ",
		"server " + srv.Name + " (" + srv.ID + ") is SHUTOFF",
		"guest " + srv.Name + " does not answer on its management address",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if !strings.Contains(console.String(), "] after the wait: ") || s.damage == "" {
		t.Errorf("log %q, damage %q: want a line of its own and a damaged topology", console.String(), s.damage)
	}
}

// The look also asks each of the pair's hypervisors the session has a
// runner for whether its ovs-vswitchd answers (offload.VswitchdCommand, replayed
// from e2e/offload/testdata/vswitchd): one that does not is named first, as damage;
// one whose runner fails is a look-up that could not be read; one with no
// runner is not asked.
func TestAfterWindowAsksVswitchd(t *testing.T) {
	vm0 := "asap2e2e-20261202t155700-3fa2-vm0"
	healthy := "servers ACTIVE on their hosts, ports ACTIVE and bound, both guests answer SSH"
	const pidfile = "/tmp/vsw/run/ovs-vswitchd.pid"
	crashed := `hypervisor compute1: ovs-vswitchd does not answer (ovs-appctl: cannot read pidfile "` + pidfile +
		`" (No such process); no ovs-vswitchd process (pid 16445 in ` + pidfile + ` is gone))`
	answering := fakeremote.Reply{Stdout: []byte(vswitchdRecording(t, "ovs-3.1-answering.txt"))}
	for _, tc := range []struct {
		name string
		// hv1, hv2: the hypervisors' answers; nil = no runner for it.
		hv1, hv2 *fakeremote.Reply
		// sameHost puts both servers on compute1.
		sameHost  bool
		guestDown bool
		want      string
		damaged   bool
		asked     []string // runners that received the command
	}{
		{name: "both answer", hv1: &answering, hv2: &answering, want: healthy, asked: []string{"hypervisor compute1", "hypervisor compute2"}},
		{name: "compute1's vswitchd crashed, its guest with it", guestDown: true,
			hv1: &fakeremote.Reply{Stdout: []byte(vswitchdRecording(t, "ovs-3.1-sigabrt.txt"))}, hv2: &answering,
			want:    crashed + "; guest " + vm0 + " does not answer on its management address " + vm0Access + ": connection refused",
			damaged: true, asked: []string{"hypervisor compute1", "hypervisor compute2"}},
		{name: "compute1's vswitchd stopped",
			hv1: &fakeremote.Reply{Stdout: []byte(vswitchdRecording(t, "ovs-3.1-sigstop.txt"))}, hv2: &answering,
			want:    "hypervisor compute1: ovs-vswitchd does not answer (ovs-appctl: terminating with signal 14 (Alarm clock); ovs-vswitchd pid 16445 (from " + pidfile + ") is stopped (state T))",
			damaged: true, asked: []string{"hypervisor compute1", "hypervisor compute2"}},
		{name: "SSH to compute1 lost", hv1: &fakeremote.Reply{Err: errors.New("ssh: connection lost")}, hv2: &answering,
			want:  "nothing abnormal in what could be read; could not read ovs-vswitchd on hypervisor compute1: ssh: connection lost",
			asked: []string{"hypervisor compute1", "hypervisor compute2"}},
		{name: "the OVS prefix fails on compute2", hv1: &answering,
			hv2:   &fakeremote.Reply{Exit: 1, Stderr: []byte("crictl: no container found\n")},
			want:  "nothing abnormal in what could be read; could not read ovs-vswitchd on hypervisor compute2: exit 1: crictl: no container found",
			asked: []string{"hypervisor compute1", "hypervisor compute2"}},
		{name: "compute2 answers past the bound", hv1: &answering, hv2: &fakeremote.Reply{Sleep: time.Hour},
			want:  "nothing abnormal in what could be read; the look stopped at its bound (intervals.command, 200ms) with no answer about ovs-vswitchd on hypervisor compute2",
			asked: []string{"hypervisor compute1", "hypervisor compute2"}},
		{name: "no hypervisor access", want: healthy},
		{name: "a runner for compute2 only", hv2: &fakeremote.Reply{Stdout: []byte(vswitchdRecording(t, "ovs-3.1-sigterm.txt"))},
			want: `hypervisor compute2: ovs-vswitchd does not answer (ovs-appctl: cannot read pidfile "` + pidfile +
				`" (No such file or directory); no ovs-vswitchd process (no pidfile at ` + pidfile + `))`,
			damaged: true, asked: []string{"hypervisor compute2"}},
		{name: "both servers on compute1: asked once", sameHost: true, hv1: &answering, hv2: &answering,
			want: healthy, asked: []string{"hypervisor compute1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := stallTopology()
			if tc.sameHost {
				topo.Servers[1].Hypervisor = "compute1"
			}
			f := healthyWitness(topo)
			if tc.guestDown {
				f.errs[vm0Access] = syscall.ECONNREFUSED
			}
			var console bytes.Buffer
			s := stallPair(t, topo, f, &console)
			world := fakeremote.NewWorld()
			s.run.Hypervisors = map[string]remote.Runner{}
			cmd := offload.VswitchdCommand(1) // half of the 200ms bound, at least 1 s
			for hv, r := range map[string]*fakeremote.Reply{"compute1": tc.hv1, "compute2": tc.hv2} {
				if r != nil {
					fr := fakeremote.New("hypervisor "+hv, world)
					fr.On(cmd, *r)
					s.run.Hypervisors[hv] = fr
				}
			}
			orig := errors.New("iperf3 run tcp-p1: control socket has closed unexpectedly")
			start := time.Now()
			err := s.explainFailure(context.Background(), "tcp-p1 repeat 1", iperf3.Measurement{}, orig)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the look took %s, bound 200ms", d)
			}
			want := orig.Error() + "; after the window: " + tc.want
			if err == nil || err.Error() != want {
				t.Errorf("got  %v\nwant %s", err, want)
			}
			if got := s.damage != ""; got != tc.damaged {
				t.Errorf("damaged = %t, want %t (%q)", got, tc.damaged, s.damage)
			}
			if tc.damaged && !strings.HasPrefix(s.damage, "tcp-p1 repeat 1 (hypervisor compute") {
				t.Errorf("damage %q: want the hypervisor first", s.damage)
			}
			var asked []string
			for _, e := range world.Log() {
				if e.Cmd != cmd {
					t.Errorf("%s got %q", e.Runner, e.Cmd)
				}
				asked = append(asked, e.Runner)
			}
			slices.Sort(asked)
			if !slices.Equal(asked, tc.asked) {
				t.Errorf("asked %q, want %q", asked, tc.asked)
			}
			if u := world.Unexpected(); len(u) > 0 {
				t.Errorf("unexpected commands: %q", u)
			}
		})
	}
}
