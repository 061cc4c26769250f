package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// fakeDebugPods records the debug pods the harness asks for.
type fakeDebugPods struct {
	created []kubeaccess.DebugPodInput
	err     error
}

func (f *fakeDebugPods) CreateDebugPod(_ context.Context, in kubeaccess.DebugPodInput) (kubeaccess.Pod, error) {
	f.created = append(f.created, in)
	if f.err != nil {
		return kubeaccess.Pod{}, f.err
	}
	in.Cleaner.Defer("delete debug pod openstack/"+in.Name, func(context.Context) error { return nil })
	return kubeaccess.Pod{Node: in.Node, Namespace: "openstack", Name: in.Name, Container: "debug"}, nil
}

func kubePair(t *testing.T, image string) (*Pair, *fixtures.Stack) {
	t.Helper()
	var st fixtures.Stack
	cfg := &config.Config{File: "mosk.yaml", Run: config.Run{NamePrefix: "asap2e2e"},
		Hypervisors: config.Hypervisors{Access: config.HypervisorAccessKubernetes, Kubernetes: config.Kubernetes{DebugImage: image}}}
	run := &Run{Config: cfg, RunID: "20261203t101500-ab12", console: &bytes.Buffer{}, cleaner: &st}
	return run.singlePair(), &st
}

// probeReply is offload.ToolsProbeCommand's output where tools are
// installed (tcpdump with a working timeout, ip with `ip stats`) and the
// rest are not (dash's "not found", exit 127).
func probeReply(tools ...string) fakeremote.Reply {
	var b strings.Builder
	rec := func(name, prog string, ok bool, line string) {
		if ok {
			fmt.Fprintf(&b, "asap2e2e-probe %s 0 %s\n", name, line)
		} else {
			fmt.Fprintf(&b, "asap2e2e-probe %s 127 sh: 1: %s: not found\n", name, prog)
		}
	}
	has := func(t string) bool { return slices.Contains(tools, t) }
	rec("tc", "tc", has("tc"), "tc utility, iproute2-6.1.0, libbpf 1.1.2")
	rec("tcpdump", "tcpdump", has("tcpdump"), "tcpdump version 4.99.3")
	rec("timeout", "timeout", true, "")
	rec("ethtool", "ethtool", has("ethtool"), "ethtool version 6.1")
	rec("ip", "ip", has("ip"), "ip utility, iproute2-6.1.0, libbpf 1.1.2")
	rec("ip-stats", "ip", has("ip"), `[{"ifindex":1,"ifname":"lo","group":"link"}]`)
	rec("setsid", "setsid", true, "")
	return fakeremote.Reply{Stdout: []byte(b.String())}
}

// An ip without `ip stats` in the OVS container (iproute2 older than 5.18)
// does not count as ip: it runs in the debug pod, and without one the
// error says what it lacks.
func TestKubeHostToolsOldIproute2(t *testing.T) {
	old := string(probeReply("tc", "tcpdump", "ethtool", "ip").Stdout)
	old = strings.Replace(old, "asap2e2e-probe ip 0 ip utility, iproute2-6.1.0, libbpf 1.1.2", "asap2e2e-probe ip 0 ip utility, iproute2-ss200127", 1)
	old = strings.Replace(old, `asap2e2e-probe ip-stats 0 [{"ifindex":1,"ifname":"lo","group":"link"}]`, `asap2e2e-probe ip-stats 255 Object "stats" is unknown, try "ip help".`, 1)
	w := fakeremote.NewWorld()
	ovs := fakeremote.New("hypervisor cmp-1 (pod openstack/ovs-a, container openvswitch-vswitchd)", w)
	ovs.On(offload.ToolsProbeCommand, fakeremote.Reply{Stdout: []byte(old)})

	s, _ := kubePair(t, "")
	_, ht, err := s.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", &fakeDebugPods{}, nil)
	want := "mosk.yaml: hypervisor cmp-1 (node cmp-1): the OVS container hypervisor cmp-1 (pod openstack/ovs-a, container openvswitch-vswitchd) lacks ip " +
		"(ip utility, iproute2-ss200127 has no `ip stats` (iproute2 5.18 or later), which the counters check reads the cpu_hit counters with: " +
		`Object "stats" is unknown, try "ip help".); set hypervisors.kubernetes.debug_image`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %q", err, want)
	}
	if !reflect.DeepEqual(ht.inOVS, []string{"tc", "tcpdump", "ethtool"}) {
		t.Errorf("found in the OVS container %v", ht.inOVS)
	}

	s, _ = kubePair(t, config.DebugImageAuto)
	dbg := fakeremote.New("debug", w)
	dbg.On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ethtool", "ip"))
	pods := &fakeDebugPods{}
	if _, _, err := s.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", pods, func(kubeaccess.Pod) (remote.Runner, error) { return dbg, nil }); err != nil {
		t.Fatal(err)
	}
	if len(pods.created) != 1 || pods.created[0].Image != config.DebugImageAuto {
		t.Errorf("debug pods %+v, want one with image auto", pods.created)
	}
}

func TestKubeHostToolsAllInTheOVSContainer(t *testing.T) {
	s, st := kubePair(t, "")
	w := fakeremote.NewWorld()
	ovs := fakeremote.New("hypervisor cmp-1 (pod openstack/ovs-a, container openvswitch-vswitchd)", w)
	ovs.On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ethtool", "ip"))
	pods := &fakeDebugPods{}
	r, ht, err := s.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", pods, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r != remote.Runner(ovs) || len(pods.created) != 0 || ht.debug != nil || st.Len() != 0 {
		t.Errorf("every tool found: got runner %T, %d debug pods, %+v", r, len(pods.created), ht)
	}
	if !reflect.DeepEqual(ht.inOVS, offload.HostTools) {
		t.Errorf("found %v", ht.inOVS)
	}
}

func TestKubeHostToolsMissingWithoutImage(t *testing.T) {
	s, _ := kubePair(t, "")
	w := fakeremote.NewWorld()
	ovs := fakeremote.New("hypervisor cmp-1 (pod openstack/ovs-a, container openvswitch-vswitchd)", w)
	ovs.On(offload.ToolsProbeCommand, probeReply("tc", "ip"))
	pods := &fakeDebugPods{}
	_, ht, err := s.kubeHostTools(context.Background(), "cmp-1.mosk", ovs, "cmp-1", pods, nil)
	want := "mosk.yaml: hypervisor cmp-1.mosk (node cmp-1): the OVS container hypervisor cmp-1 (pod openstack/ovs-a, container openvswitch-vswitchd) lacks tcpdump (tcpdump is not installed (exit 127: sh: 1: tcpdump: not found)); set hypervisors.kubernetes.debug_image"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %q", err, want)
	}
	if len(pods.created) != 0 || !reflect.DeepEqual(ht.inOVS, []string{"tc", "ip"}) {
		t.Errorf("debug pods %d, found %v", len(pods.created), ht.inOVS)
	}
	// ethtool alone missing: it only feeds the NIC facts; no debug pod,
	// the run goes on and says what it costs.
	ovs.On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ip"))
	r, _, err := s.kubeHostTools(context.Background(), "cmp-1.mosk", ovs, "cmp-1", pods, nil)
	if err != nil || r != remote.Runner(ovs) || len(pods.created) != 0 {
		t.Errorf("ethtool missing: err %v, runner %v, debug pods %d", err, r, len(pods.created))
	}
	if log := s.run.console.(*bytes.Buffer).String(); !strings.Contains(log, `cmp-1.mosk: no ethtool where its host tools run: the run goes on, the NIC facts are recorded as "unknown (no ethtool)"`) {
		t.Errorf("log:\n%s", log)
	}
}

// The tools the OVS container lacks run in the node's debug pod, created
// with the run's name, labels, image, interval and cleaner; everything
// else stays in the OVS container.
func TestKubeHostToolsDebugPod(t *testing.T) {
	s, st := kubePair(t, "registry.example/tools/netshoot:v0.13")
	w := fakeremote.NewWorld()
	ovs := fakeremote.New("ovs", w)
	ovs.On(offload.ToolsProbeCommand, probeReply("ip"))
	ovs.On(offload.CmdTunnels, fakeremote.Reply{Stdout: []byte("{}")})
	ovs.On(offload.LinkCommand("vxlan_sys_4790"), fakeremote.Reply{Stdout: []byte("[]")})
	dbg := fakeremote.New("debug", w)
	dbg.On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ethtool", "ip"))
	capture := offload.CaptureCommand("rep1", "udp", time.Second, 10)
	dbg.On(capture, fakeremote.Reply{Stdout: []byte("")})
	dbg.On(offload.TCCommand("rep1"), fakeremote.Reply{Stdout: []byte("[]")})
	dbg.On("ethtool -i rep1", fakeremote.Reply{Stdout: []byte("driver: mlx5e_rep\n")})
	pods := &fakeDebugPods{}
	var gotPod kubeaccess.Pod
	r, ht, err := s.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", pods, func(p kubeaccess.Pod) (remote.Runner, error) {
		gotPod = p
		return dbg, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.created) != 1 {
		t.Fatalf("debug pods created: %d", len(pods.created))
	}
	in := pods.created[0]
	if in.Name != "asap2e2e-20261203t101500-ab12-debug-cmp-1" || in.Prefix != "asap2e2e" || in.RunID != "20261203t101500-ab12" ||
		in.Node != "cmp-1" || in.Image != "registry.example/tools/netshoot:v0.13" || in.Interval != config.DefaultIntervals[config.IntervalDebugPod] || in.Cleaner == nil {
		t.Errorf("debug pod input %+v", in)
	}
	if b := plan.RunBudget(s.run.Config).Total; b <= 0 || in.ActiveDeadline != b {
		t.Errorf("active deadline %s, want the run's budget %s", in.ActiveDeadline, b)
	}
	if st.Len() != 1 {
		t.Errorf("cleanups %d, want the debug pod's delete", st.Len())
	}
	if gotPod.Name != in.Name || ht.debug == nil || ht.debug.Name != in.Name {
		t.Errorf("runner for %+v, recorded %+v", gotPod, ht.debug)
	}
	ctx := context.Background()
	for _, cmd := range []string{capture, offload.TCCommand("rep1"), "ethtool -i rep1", offload.CmdTunnels, offload.LinkCommand("vxlan_sys_4790")} {
		if _, err := r.Run(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	if u := w.Unexpected(); len(u) != 0 {
		t.Errorf("commands sent to the wrong place: %v", u)
	}
	var where []string
	for _, e := range w.Log() {
		where = append(where, e.Runner+": "+strings.Fields(e.Cmd)[0])
	}
	want := []string{"ovs: p()", "debug: p()", "debug: timeout", "debug: tc", "debug: ethtool", "ovs: ovs-vsctl", "ovs: ip"}
	if !reflect.DeepEqual(where, want) {
		t.Errorf("commands ran\n %v\nwant\n %v", where, want)
	}
}

func TestKubeHostToolsDebugPodFails(t *testing.T) {
	s, _ := kubePair(t, "registry.example/tools/busybox:1")
	w := fakeremote.NewWorld()
	ovs := fakeremote.New("ovs", w)
	ovs.On(offload.ToolsProbeCommand, probeReply("tc", "ip"))
	t.Run("create fails", func(t *testing.T) {
		pods := &fakeDebugPods{err: errors.New("kubernetes: debug pod openstack/x on node cmp-1 Running: gave up; phase Pending")}
		_, _, err := s.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", pods, nil)
		if err == nil || !strings.Contains(err.Error(), "hypervisor cmp-1: ovs lacks tcpdump: kubernetes: debug pod") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("the image lacks a tool too", func(t *testing.T) {
		dbg := fakeremote.New("debug", w)
		dbg.On(offload.ToolsProbeCommand, probeReply("tc", "ip", "ethtool"))
		_, ht, err := s.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", &fakeDebugPods{}, func(kubeaccess.Pod) (remote.Runner, error) { return dbg, nil })
		want := "mosk.yaml: hypervisor cmp-1 (node cmp-1): neither the OVS container nor the debug pod (hypervisors.kubernetes.debug_image registry.example/tools/busybox:1) has tcpdump (tcpdump is not installed (exit 127: sh: 1: tcpdump: not found))"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %q", err, want)
		}
		if ht.debug == nil {
			t.Error("the created pod is not recorded")
		}
	})
	t.Run("the image lacks ethtool alone", func(t *testing.T) {
		dbg := fakeremote.New("debug", w)
		dbg.On(offload.ToolsProbeCommand, probeReply("tc", "ip", "tcpdump"))
		r, _, err := s.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", &fakeDebugPods{}, func(kubeaccess.Pod) (remote.Runner, error) { return dbg, nil })
		if err != nil {
			t.Fatal(err)
		}
		// ethtool is found nowhere: it stays where OVS runs and fails there
		// (the NIC facts are then "unknown (no ethtool)").
		if offload.ToolOf("ethtool -i rep1") != "ethtool" || r.Name() != "ovs" {
			t.Errorf("runner %s", r.Name())
		}
	})
	t.Run("no cleaner", func(t *testing.T) {
		s2, _ := kubePair(t, "img")
		s2.run.cleaner = nil
		_, _, err := s2.kubeHostTools(context.Background(), "cmp-1", ovs, "cmp-1", &fakeDebugPods{}, nil)
		if err == nil || !strings.Contains(err.Error(), "no cleaner") {
			t.Errorf("got %v", err)
		}
	})
}

// CollectEnvironment records tc -V, and with kubernetes where the host
// tools ran.
func TestCollectEnvironmentTCAndHostTools(t *testing.T) {
	wd := newPair(t)
	s := wd.session()
	hv0, hv1 := wd.topo.Servers[0].Hypervisor, wd.topo.Servers[1].Hypervisor
	for _, g := range wd.guests {
		g.On("uname -r", fakeremote.Reply{Stdout: []byte("6.8.0-45-generic\n")})
	}
	for i, hv := range wd.hvs {
		hv.On("uname -r", fakeremote.Reply{Stdout: []byte("6.8.0-45-generic\n")})
		hv.On("ovs-vsctl --version", fakeremote.Reply{Stdout: readFile(t, filepath.Join("..", "envinfo", "testdata", "ovs-vsctl-version.txt"))})
		tcv := []string{"tc-V-ubuntu2404.txt", "tc-V-iproute2-5.15.txt"}[i]
		hv.On("tc -V", fakeremote.Reply{Stdout: readFile(t, filepath.Join("..", "envinfo", "testdata", tcv))})
		hv.On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), fakeremote.Reply{Stdout: []byte("rep1\n")})
		hv.On("ethtool -i rep1", fakeremote.Reply{Stdout: []byte("driver: mlx5e_rep\nversion: 6.8\nfirmware-version: 26.43\nbus-info: 0000:08:00.2\n")})
	}
	s.run.hvPods = map[string]kubeaccess.Pod{hv0: {Node: hv0, Namespace: "openstack", Name: "ovs-a", Container: "openvswitch-vswitchd"}}
	s.run.hvTools = map[string]hostTools{hv0: {inOVS: []string{"ip"}, debug: &kubeaccess.Pod{Namespace: "openstack", Name: "asap2e2e-x-debug-" + hv0, Container: "debug"}}}
	if err := s.CollectEnvironment(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := s.Results.Snapshot()
	if len(got.Errors) != 0 {
		t.Errorf("errors: %v", got.Errors)
	}
	h := got.Environment.Hypervisors
	if len(h) != 2 || h[0].Name != hv0 || h[1].Name != hv1 {
		t.Fatalf("hypervisors %+v", h)
	}
	if h[0].TCVersion != "iproute2-6.1.0, libbpf 1.3.0" || h[1].TCVersion != "iproute2-5.15.0" {
		t.Errorf("tc versions %q, %q", h[0].TCVersion, h[1].TCVersion)
	}
	if h[0].Transport != "kubernetes" || h[0].HostToolsPod != "openstack/asap2e2e-x-debug-"+hv0 || h[0].HostToolsContainer != "debug" ||
		!reflect.DeepEqual(h[0].OVSContainerTools, []string{"ip"}) {
		t.Errorf("kubernetes hypervisor %+v", h[0])
	}
	if h[1].HostToolsPod != "" || h[1].OVSContainerTools != nil {
		t.Errorf("ssh hypervisor %+v", h[1])
	}
	// An unreadable tc -V is a recorded problem, not a made-up version.
	wd.hvs[1].On("tc -V", fakeremote.Reply{Stdout: []byte("Object \"-V\" is unknown, try \"tc help\".\n")})
	if err := s.CollectEnvironment(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = s.Results.Snapshot()
	if got.Environment.Hypervisors[1].TCVersion != "" || len(got.Errors) != 1 || !strings.Contains(got.Errors[0], hv1+`: tc -V: expected "tc utility, iproute2-VERSION`) {
		t.Errorf("tc -V unreadable: version %q, errors %v", got.Environment.Hypervisors[1].TCVersion, got.Errors)
	}
}

// fakeCluster is a kubeaccess.Cluster that answers the preflight and the
// debug pods as its parts do and the sweep with swept, recording each
// sweep asked for; it has no runners.
type fakeCluster struct {
	fakePreflight
	fakeDebugPods
	swept  []kubeaccess.SweptPod
	sweeps []kubeaccess.SweepInput
	closed int // Close calls (kube.Cluster's removes its kubeconfig copy)
}

func (f *fakeCluster) Close() error { f.closed++; return nil }

func (f *fakeCluster) Runner(context.Context, kubeaccess.Target) (kubeaccess.PodRunner, kubeaccess.NodeMatch, error) {
	return nil, kubeaccess.NodeMatch{}, errors.New("fakeCluster: no runners")
}

func (f *fakeCluster) RunnerIn(string, kubeaccess.Pod) (kubeaccess.PodRunner, error) {
	return nil, errors.New("fakeCluster: no runners")
}

func (f *fakeCluster) SweepDebugPods(_ context.Context, in kubeaccess.SweepInput) ([]kubeaccess.SweptPod, error) {
	f.sweeps = append(f.sweeps, in)
	return f.swept, nil
}

// The leak check's Kubernetes share: this run's debug pods (the cluster
// selects them by label: kube's sweep tests), listed, never deleted, as
// rows of the leak report.
func TestLeakedDebugPods(t *testing.T) {
	s, _ := kubePair(t, "img")
	name := "asap2e2e-" + s.run.RunID + "-debug-cmp-1"
	created := time.Date(2026, 12, 3, 10, 16, 0, 0, time.UTC)
	if got, err := s.run.leakedDebugPods(context.Background()); err != nil || got != nil {
		t.Errorf("no cluster (never connected): %v, %v", got, err)
	}
	c := &fakeCluster{swept: []kubeaccess.SweptPod{{Kind: "kubernetes pod", ID: "openstack/" + name, Name: name, CreatedAt: &created,
		Tags: []string{"asap2-e2e/run-id=" + s.run.RunID}, Action: "would delete", Reason: "node cmp-1"}}}
	s.run.kube = c
	got, err := s.run.leakedDebugPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.sweeps) != 1 {
		t.Fatalf("sweeps %+v", c.sweeps)
	}
	if in := c.sweeps[0]; in.Prefix != "asap2e2e" || in.RunID != s.run.RunID || in.Delete || in.All || in.OlderThan != 0 || in.Logf == nil {
		t.Errorf("the leak check asked for %+v: want this run's pods (prefix asap2e2e, run %s), not deleted", in, s.run.RunID)
	}
	want := []fixtures.SweptResource{{Kind: "kubernetes pod", ID: "openstack/" + name, Name: name, CreatedAt: &created,
		Tags: []string{"asap2-e2e/run-id=" + s.run.RunID}, Action: "would delete", Reason: "node cmp-1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("leaks %+v, want %+v", got, want)
	}
	if line := DescribeLeft(&fixtures.SweepReport{Resources: got}); line != "kubernetes pod "+name+" (openstack/"+name+")" {
		t.Errorf("DescribeLeft: %q", line)
	}
	// Without a debug image there are no debug pods to look for.
	s.run.Config.Hypervisors.Kubernetes.DebugImage = ""
	if got, err := s.run.leakedDebugPods(context.Background()); err != nil || got != nil || len(c.sweeps) != 1 {
		t.Errorf("no debug image: %v, %v, sweeps %d", got, err, len(c.sweeps))
	}
}

// The cluster is opened with Options.Kubernetes, given the config's block
// and intervals.kube_api; a program that passed none (built without the
// Kubernetes client) stops at the preflight, naming the config and the
// option, and so does one whose cluster does not open.
func TestOpenCluster(t *testing.T) {
	s, _ := kubePair(t, "")
	s.run.Config.Hypervisors.Kubernetes.Namespace = "openstack"
	s.run.Config.Placement.Hosts = []string{"cmp-1"}
	s.run.Config.Intervals = map[string]config.Interval{config.IntervalKubeAPI: {Timeout: 7 * time.Second, Poll: time.Second}}
	err := s.run.PreflightKube(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "mosk.yaml: hypervisors.access: kubernetes, but this program has no Kubernetes client (harness.Options.Kubernetes is nil") {
		t.Errorf("no Options.Kubernetes: %v", err)
	}
	c := &fakeCluster{}
	var gotK config.Kubernetes
	var gotO kubeaccess.Options
	s.run.openKube = func(k config.Kubernetes, o kubeaccess.Options) (kubeaccess.Cluster, error) {
		gotK, gotO = k, o
		return c, nil
	}
	if err := s.run.PreflightKube(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if gotK.Namespace != "openstack" || gotO.API != (config.Interval{Timeout: 7 * time.Second, Poll: time.Second}) {
		t.Errorf("opened with %+v, %+v", gotK, gotO)
	}
	// The cluster logs to the run's log (client-go's klog among it), not
	// to stderr.
	if gotO.Logf == nil {
		t.Error("opened without the run's log (Options.Logf)")
	}
	if !reflect.DeepEqual(c.in.Hypervisors, []kubeaccess.Target{{Hypervisor: "cmp-1"}}) {
		t.Errorf("the opened cluster was asked %+v", c.in)
	}
	// A cluster opened for the preflight alone is closed after it.
	if c.closed != 1 {
		t.Errorf("the preflight's own cluster was closed %d times, want 1", c.closed)
	}
	s.run.openKube = func(config.Kubernetes, kubeaccess.Options) (kubeaccess.Cluster, error) {
		return nil, errors.New("kubernetes: kubeconfig k.yaml: no such file")
	}
	if err := s.run.PreflightKube(context.Background(), nil); err == nil || err.Error() != "mosk.yaml: hypervisors.kubernetes: kubernetes: kubeconfig k.yaml: no such file" {
		t.Errorf("cluster that does not open: %v", err)
	}
}

// fakePreflight answers a preflight with a fixed report and records what
// it was asked.
type fakePreflight struct {
	in     kubeaccess.PreflightInput
	report kubeaccess.PreflightReport
}

func (f *fakePreflight) Preflight(_ context.Context, in kubeaccess.PreflightInput) kubeaccess.PreflightReport {
	f.in = in
	return f.report
}

func TestPreflightKube(t *testing.T) {
	s, _ := kubePair(t, "registry.example/tools/netshoot:v0.13")
	s.run.Config.Placement.Hosts = []string{"cmp-1.mosk.example.net", "cmp-2.mosk.example.net"}
	s.run.Config.Hypervisors.Kubernetes.NodeNames = map[string]string{"cmp-2.mosk.example.net": "cmp-2", "cmp-0": "kaas-node-0"}
	f := &fakePreflight{report: kubeaccess.PreflightReport{Source: "kubeconfig k.yaml, context mosk", Checks: []kubeaccess.Check{
		{What: "list pods in namespace openstack"},
		{What: "create pods/exec in namespace openstack", Problem: "kubeconfig k.yaml, context mosk may not create pods/exec in namespace openstack"},
	}, Warnings: []string{"the token of kubeconfig k.yaml expires in 1h0m0s, the run needs up to 3h10m0s"}}}
	err := s.run.PreflightKube(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "mosk.yaml: kubernetes preflight (kubeconfig k.yaml, context mosk): 1 problem(s)") ||
		!strings.Contains(err.Error(), "may not create pods/exec") || !strings.Contains(err.Error(), "nothing was created; go run ./tools/kubecheck mosk.yaml") {
		t.Errorf("error: %v", err)
	}
	want := []kubeaccess.Target{{Hypervisor: "cmp-1.mosk.example.net"}, {Hypervisor: "cmp-2.mosk.example.net"}, {Hypervisor: "cmp-0"}}
	if !reflect.DeepEqual(f.in.Hypervisors, want) {
		t.Errorf("hypervisors %+v, want %+v", f.in.Hypervisors, want)
	}
	if d := f.in.DebugPod; d == nil || d.Image != "registry.example/tools/netshoot:v0.13" || d.Name != "asap2e2e-20261203t101500-ab12-debug-preflight" || d.RunID != s.run.RunID {
		t.Errorf("debug pod %+v", d)
	}
	// The run's budget goes with it (a token that expires before is a
	// warning), and the warnings go to the log.
	if want := plan.RunBudget(s.run.Config).Total; f.in.RunBudget != want || want <= 0 {
		t.Errorf("run budget %v, want plan.RunBudget's %v", f.in.RunBudget, want)
	}
	log := s.run.console.(*bytes.Buffer).String()
	if !strings.Contains(log, "WARNING: kubernetes preflight: the token of kubeconfig k.yaml expires in 1h0m0s, the run needs up to 3h10m0s") {
		t.Errorf("the warning is not in the log:\n%s", log)
	}
	if !strings.Contains(log, "kubernetes preflight: ok: list pods in namespace openstack") || !strings.Contains(log, "kubernetes preflight: FAILED: kubeconfig k.yaml") {
		t.Errorf("log:\n%s", log)
	}
	if snap := s.Timings.Snapshot(); len(snap) != 1 || snap[0].Phase != results.PhasePreflight {
		t.Errorf("timings %+v", snap)
	}
	// Passing, and without a debug image: no dry run asked for.
	s, _ = kubePair(t, "")
	f.report.Checks = f.report.Checks[:1]
	if err := s.run.PreflightKube(context.Background(), f); err != nil || f.in.DebugPod != nil {
		t.Errorf("err %v, debug pod %+v", err, f.in.DebugPod)
	}
	// Over SSH there is nothing to check.
	s.run.Config.Hypervisors.Access = config.HypervisorAccessSSH
	if err := s.run.PreflightKube(context.Background(), nil); err != nil {
		t.Error(err)
	}
}
