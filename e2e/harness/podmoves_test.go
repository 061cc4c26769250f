package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// movingPodRunner is a kubeaccess.PodRunner over a fake hypervisor that,
// as kube.Runner does, finds its pod gone on a command of vanish: that
// command fails with a PodGoneError, the runner moves to the replacement
// and tells Options.Replaced; the later commands run in the replacement.
type movingPodRunner struct {
	hv       string
	fake     *fakeremote.Runner
	replaced func(kubeaccess.PodReplacement)

	mu  sync.Mutex
	pod kubeaccess.Pod
	// vanish: a command → the pod that replaces the current one when it
	// arrives (once).
	vanish map[string]kubeaccess.Pod
	// ranIn is "<pod>: <command>" of every command that ran.
	ranIn []string
}

var _ kubeaccess.PodRunner = (*movingPodRunner)(nil)

func (r *movingPodRunner) Pod() kubeaccess.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod
}

func (r *movingPodRunner) Name() string { return fmt.Sprintf("hypervisor %s (%s)", r.hv, r.Pod()) }

func (r *movingPodRunner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	r.mu.Lock()
	old := r.pod
	next, gone := r.vanish[cmd]
	if gone {
		delete(r.vanish, cmd)
		r.pod = next
	} else {
		r.ranIn = append(r.ranIn, old.Name+": "+cmd)
	}
	r.mu.Unlock()
	if !gone {
		return r.fake.Run(ctx, cmd)
	}
	r.replaced(kubeaccess.PodReplacement{Hypervisor: r.hv, Old: old, New: next, How: "NotFound", At: time.Now()})
	return remote.Result{Target: r.hv, Cmd: cmd, ExitCode: -1}, &kubeaccess.PodGoneError{Hypervisor: r.hv, Old: old, How: "NotFound",
		Server: "https://198.18.0.1:16443", New: &next, Err: errors.New("no exit status")}
}

func (r *movingPodRunner) Start(ctx context.Context, cmd string) (remote.Process, error) {
	return r.fake.Start(ctx, cmd)
}

func (r *movingPodRunner) commands() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ranIn...)
}

// movingCluster hands out movingPodRunners that tell the Options it was
// opened with.
type movingCluster struct {
	fakeCluster
	opened  kubeaccess.Options
	runners map[string]*movingPodRunner
}

func (c *movingCluster) Runner(_ context.Context, t kubeaccess.Target) (kubeaccess.PodRunner, kubeaccess.NodeMatch, error) {
	r, ok := c.runners[t.Hypervisor]
	if !ok {
		return nil, kubeaccess.NodeMatch{}, fmt.Errorf("movingCluster: no node for %s", t)
	}
	r.replaced = c.opened.Replaced
	return r, kubeaccess.NodeMatch{Node: r.pod.Node, How: "hypervisor name"}, nil
}

// ovsPod is the OVS pod name on node.
func ovsPod(node, name string) kubeaccess.Pod {
	return kubeaccess.Pod{Node: node, Namespace: "openstack", Name: name, Container: "openvswitch-vswitchd"}
}

// A run over Kubernetes whose OVS pods are replaced: compute2's between
// connect and the environment's collection, compute1's under a check's
// command after it. results.json keeps each hypervisor's pod found at
// connect and names every replacement, in order, with its node, time and
// reason; the later commands ran in the replacements.
func TestPodReplacedMidRunInResults(t *testing.T) {
	wd := newPair(t)
	s := wd.session()
	s.run.Config.Hypervisors = config.Hypervisors{Access: config.HypervisorAccessKubernetes,
		Kubernetes: config.Kubernetes{Namespace: "openstack", Container: "openvswitch-vswitchd"}}
	file := filepath.Join(s.Dir, ResultsFile)
	w, err := results.NewWriter(file, results.Results{SchemaVersion: results.SchemaVersion, RunID: s.run.RunID, StartedAt: time.Now().UTC(), Config: configSummary(wd.cfg)})
	if err != nil {
		t.Fatal(err)
	}
	s.Results, s.run.Results, s.run.dialer, s.run.Hypervisors = w, w, &remote.Dialer{}, map[string]remote.Runner{}
	hv0, hv1 := hvNames[0], hvNames[1]
	const check, flows = "tc -s -j filter show dev rep1 ingress", "ovs-appctl dpctl/dump-flows -m"
	c := &movingCluster{runners: map[string]*movingPodRunner{
		hv0: {hv: hv0, fake: wd.hvs[0], pod: ovsPod(hv0, "ovs-a"), vanish: map[string]kubeaccess.Pod{check: ovsPod(hv0, "ovs-b")}},
		hv1: {hv: hv1, fake: wd.hvs[1], pod: ovsPod(hv1, "ovs-x"), vanish: map[string]kubeaccess.Pod{flows: ovsPod(hv1, "ovs-y")}},
	}}
	s.run.openKube = func(_ config.Kubernetes, o kubeaccess.Options) (kubeaccess.Cluster, error) {
		c.opened = o
		return c, nil
	}
	for _, g := range wd.guests {
		g.On("uname -r", fakeremote.Reply{Stdout: []byte("6.8.0-45-generic\n")})
	}
	for i, hv := range wd.hvs {
		hv.On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ethtool", "ip"))
		hv.On("uname -r", fakeremote.Reply{Stdout: []byte("6.8.0-45-generic\n")})
		hv.On("ovs-vsctl --version", fakeremote.Reply{Stdout: readFile(t, filepath.Join("..", "envinfo", "testdata", "ovs-vsctl-version.txt"))})
		hv.On("tc -V", fakeremote.Reply{Stdout: readFile(t, filepath.Join("..", "envinfo", "testdata", "tc-V-ubuntu2404.txt"))})
		hv.On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), fakeremote.Reply{Stdout: []byte("rep1\n")})
		hv.On("ethtool -i rep1", fakeremote.Reply{Stdout: []byte("driver: mlx5e_rep\nversion: 6.8\nfirmware-version: 26.43\nbus-info: 0000:08:00.2\n")})
		hv.On(check, fakeremote.Reply{Stdout: []byte("[]\n")})
		hv.On(flows, fakeremote.Reply{})
	}
	ctx := context.Background()
	for _, srv := range wd.topo.Servers {
		if err := s.connectKube(ctx, kubeaccess.Target{Hypervisor: srv.Hypervisor}); err != nil {
			t.Fatal(err)
		}
	}
	if c.opened.Replaced == nil {
		t.Fatal("the cluster was opened without Options.Replaced")
	}
	var gone *kubeaccess.PodGoneError
	t1 := time.Now()
	if _, err := s.run.Hypervisors[hv1].Run(ctx, flows); !errors.As(err, &gone) {
		t.Fatalf("%s: %v, want the pod gone", hv1, err)
	}
	if err := s.CollectEnvironment(ctx); err != nil {
		t.Fatal(err)
	}
	// The move told before the environment was there is in it.
	if r, err := results.Load(file); err != nil {
		t.Fatal(err)
	} else if hs := r.Environment.Hypervisors; len(hs) != 2 || hs[0].PodReplacements != nil || len(hs[1].PodReplacements) != 1 {
		t.Errorf("after the environment's collection: %+v; want %s's replacement only", hs, hv1)
	}
	t0 := time.Now()
	if _, err := s.run.Hypervisors[hv0].Run(ctx, check); !errors.As(err, &gone) {
		t.Fatalf("%s: %v, want the pod gone", hv0, err)
	}
	end := time.Now()
	if res, err := s.run.Hypervisors[hv0].Run(ctx, check); err != nil || !res.OK() {
		t.Fatalf("%s after the move: exit %d, %v", hv0, res.ExitCode, err)
	}

	r, err := results.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	hs := r.Environment.Hypervisors
	if len(hs) != 2 || hs[0].Name != hv0 || hs[1].Name != hv1 {
		t.Fatalf("hypervisors %+v", hs)
	}
	for i, want := range []struct {
		pod        string
		from, to   string
		node       string
		start, end time.Time
	}{
		{"openstack/ovs-a", "openstack/ovs-a", "openstack/ovs-b", hv0, t0, end},
		{"openstack/ovs-x", "openstack/ovs-x", "openstack/ovs-y", hv1, t1, t0},
	} {
		h := hs[i]
		if h.Transport != config.HypervisorAccessKubernetes || h.Pod != want.pod || h.Container != "openvswitch-vswitchd" {
			t.Errorf("%s: transport %q, pod %q, container %q; want kubernetes, the pod found at connect %s", h.Name, h.Transport, h.Pod, h.Container, want.pod)
		}
		if len(h.PodReplacements) != 1 {
			t.Errorf("%s: replacements %+v, want one", h.Name, h.PodReplacements)
			continue
		}
		m := h.PodReplacements[0]
		if m.From != want.from || m.To != want.to || m.Node != want.node || m.Reason != "pod vanished: NotFound" ||
			m.At.Before(want.start.Add(-time.Second)) || m.At.After(want.end.Add(time.Second)) || m.At.Location() != time.UTC {
			t.Errorf("%s: replacement %+v; want %s → %s on %s, pod vanished: NotFound, between %s and %s (UTC)", h.Name, m, want.from, want.to, want.node, want.start, want.end)
		}
	}
	if got, want := c.runners[hv0].commands(), "ovs-b: "+check; len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("%s's commands ran in %v; want the last, %q", hv0, got, want)
	}
}

// A fleet's pair tells its moves to the fleet's run, whose results hold
// the environment; a move of a hypervisor not (yet) recorded waits in the
// history for the environment's collection.
func TestPairPodMovesGoToTheFleetsResults(t *testing.T) {
	file := filepath.Join(t.TempDir(), ResultsFile)
	w, err := results.NewWriter(file, results.Results{SchemaVersion: results.SchemaVersion, RunID: "r1",
		Environment: results.Environment{Hypervisors: []results.Hypervisor{{Name: "compute5", Transport: "kubernetes", Pod: "openstack/ovs-a"}}}})
	if err != nil {
		t.Fatal(err)
	}
	root := &Run{Results: w}
	pair := &Pair{run: root}
	at := time.Date(2026, 12, 4, 12, 1, 3, 0, time.FixedZone("CET", 3600))
	pair.run.podReplaced(kubeaccess.PodReplacement{Hypervisor: "compute5", Old: ovsPod("compute5", "ovs-a"), New: ovsPod("compute5", "ovs-b"), How: "being deleted", At: at})
	pair.run.podReplaced(kubeaccess.PodReplacement{Hypervisor: "compute6", Old: ovsPod("compute6", "ovs-x"), New: ovsPod("compute6", "ovs-y"), How: "NotFound", At: at})
	r, err := results.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []results.PodReplacement{{From: "openstack/ovs-a", To: "openstack/ovs-b", Node: "compute5", At: at.UTC(), Reason: "pod vanished: being deleted"}}
	if got := r.Environment.Hypervisors[0].PodReplacements; !reflect.DeepEqual(got, want) {
		t.Errorf("compute5: %+v, want %+v", got, want)
	}
	if len(root.podMoves["compute6"]) != 1 {
		t.Errorf("history: fleet %v; want compute6's move in the fleet's", root.podMoves)
	}
	// The environment collected later names compute6's move too.
	if err := w.Update(func(r *results.Results) {
		r.Environment.Hypervisors = append(r.Environment.Hypervisors, results.Hypervisor{Name: "compute6", Transport: "kubernetes", Pod: "openstack/ovs-x"})
		pair.run.recordPodMoves(r)
	}); err != nil {
		t.Fatal(err)
	}
	if got := w.Snapshot().Environment.Hypervisors[1].PodReplacements; len(got) != 1 || got[0].To != "openstack/ovs-y" {
		t.Errorf("compute6: %+v", got)
	}
}
