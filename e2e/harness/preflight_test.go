package harness

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures/fakecloud"
)

// preflightRun is a run on the fake cloud, as Start leaves it
// before the first create: the tenant's clients with their project, a
// flavor of 16 vCPUs to create, SSH hypervisors compute1 and compute2
// reached through hvs (every dial recorded).
func preflightRun(t *testing.T) (*Run, *fakecloud.Cloud, map[string]*fakeremote.Runner, *[]string) {
	t.Helper()
	fc := fakecloud.New()
	t.Cleanup(fc.Close)
	cfg := &config.Config{File: "mosk.yaml",
		Run:         config.Run{NamePrefix: "asap2e2e"},
		Flavor:      config.Flavor{Name: "perf", Create: true, VCPUs: 16, RAMMB: 16384},
		Network:     config.Network{CIDR: "198.18.10.0/24"},
		GuestAccess: config.GuestAccess{Mode: config.AccessManagementNetwork},
		Offload:     config.Offload{Checks: append([]string(nil), results.AllChecks...)},
		Hypervisors: config.Hypervisors{Hosts: map[string]config.SSHEndpoint{"compute1": {Address: "198.18.0.11"}, "compute2": {Address: "198.18.0.12"}}},
	}
	w := fakeremote.NewWorld()
	hvs := map[string]*fakeremote.Runner{"compute1": fakeremote.New("hypervisor compute1 (198.18.0.11)", w), "compute2": fakeremote.New("hypervisor compute2 (198.18.0.12)", w)}
	var dialed []string
	s := &Run{Config: cfg, RunID: "20261205t171500-ab12", console: &bytes.Buffer{}, Hypervisors: map[string]remote.Runner{},
		Clients: &cloud.Clients{Tenant: &cloud.Set{Compute: fc.Compute(), Network: fc.Network(), Image: fc.Image(), ProjectID: "9f3c0a1e", ProjectName: "demo"}},
		hvDial: func(_ context.Context, hv string) (remote.Runner, error) {
			dialed = append(dialed, hv)
			if r, ok := hvs[hv]; ok {
				return r, nil
			}
			return nil, errors.New("ssh to hypervisor " + hv + ": not reachable")
		}}
	return s, fc, hvs, &dialed
}

// noPOST fails when the fake cloud saw any create.
func noPOST(t *testing.T, fc *fakecloud.Cloud) {
	t.Helper()
	for _, c := range fc.Snapshot() {
		if strings.HasPrefix(c, "POST") {
			t.Errorf("the refused preflight created something: %s", c)
		}
	}
}

// A quota shortfall and a hypervisor lacking a required tool are refused
// together, with the numbers and the node, and nothing is created; a
// hypervisor lacking only ethtool passes (the NIC facts are then unknown).
func TestPreflightRefusesEverythingAtOnceBeforeAnyCreate(t *testing.T) {
	s, fc, hvs, dialed := preflightRun(t)
	fc.QuotaUsed = map[string]int{"compute/instances": 9}
	hvs["compute1"].On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ip"))
	hvs["compute2"].On(offload.ToolsProbeCommand, probeReply("tc", "ethtool", "ip"))
	err := s.Preflight(context.Background(), 1, nil)
	if err == nil {
		t.Fatal("not refused")
	}
	for _, want := range []string{
		"mosk.yaml: preflight refused the run before anything was created (2 problem(s))",
		"project demo (9f3c0a1e)",
		"compute cores: the run needs 32, 0 in use of 20 → 20 free",
		"compute instances: the run needs 2, 9 in use of 10 → 1 free",
		"hypervisor compute2 (hypervisor compute2 (198.18.0.12)) lacks tcpdump (tcpdump is not installed",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "compute1") {
		t.Errorf("compute1 lacks only ethtool, which is optional: %v", err)
	}
	log := s.console.(*bytes.Buffer).String()
	if !strings.Contains(log, `compute1: no ethtool where its host tools run: the run goes on, the NIC facts are recorded as "unknown (no ethtool)"`) {
		t.Errorf("log:\n%s", log)
	}
	// Every hypervisors.hosts entry, as no placement.hosts names the pair's.
	if strings.Join(*dialed, ",") != "compute1,compute2" || s.Hypervisors["compute1"] == nil {
		t.Errorf("dialed %v, kept %v", *dialed, s.Hypervisors)
	}
	noPOST(t, fc)
	if snap := s.Timings.Snapshot(); len(snap) != 1 || snap[0].Phase != results.PhasePreflight {
		t.Errorf("timings %+v", snap)
	}
}

// Unlimited quotas (-1) and every tool there: the preflight passes, and
// placement.hosts narrows the hypervisors probed to the pair's.
func TestPreflightPassesUnlimited(t *testing.T) {
	s, fc, hvs, dialed := preflightRun(t)
	fc.QuotaLimits = map[string]int{"compute/cores": -1, "compute/ram": -1}
	s.Config.Placement.Hosts = []string{"compute2"}
	hvs["compute2"].On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ethtool", "ip"))
	if err := s.Preflight(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(*dialed, ",") != "compute2" {
		t.Errorf("dialed %v", *dialed)
	}
	log := s.console.(*bytes.Buffer).String()
	if !strings.Contains(log, "quota: ok: compute cores: the run needs 32, 0 in use, unlimited") {
		t.Errorf("log:\n%s", log)
	}
	if !regexp.MustCompile(`API latency: compute [\d.]+[µm]?s \(median of 3 calls\), network [\d.]+[µm]?s \(median of 3 calls\)`).MatchString(log) {
		t.Errorf("no API latency in the log:\n%s", log)
	}
	noPOST(t, fc)
}

// Quota APIs the tenant may not read are a warning that says so; the run
// goes on. A fleet's pairs multiply the demand.
func TestPreflightQuotaForbiddenWarns(t *testing.T) {
	s, fc, _, _ := preflightRun(t)
	s.Config.Offload.Checks = nil // no checks: no tools probed
	fc.QuotaForbidden = true
	if err := s.Preflight(context.Background(), 4, nil); err != nil {
		t.Fatal(err)
	}
	log := s.console.(*bytes.Buffer).String()
	if !strings.Contains(log, "WARNING: quota: compute quotas (os-quota-sets/9f3c0a1e/detail) not readable with these credentials, not checked") ||
		!strings.Contains(log, "WARNING: quota: network quotas") {
		t.Errorf("log:\n%s", log)
	}
}

// podRunner is a fake runner in a pod.
type podRunner struct {
	*fakeremote.Runner
	pod kubeaccess.Pod
}

func (p podRunner) Pod() kubeaccess.Pod { return p.pod }

// probeCluster runs each pod's commands on its node's fake runner and
// maps a target hypervisor to the pod of the node of the same name.
type probeCluster struct {
	fakeCluster
	pods    map[string]kubeaccess.Pod // by node
	runners map[string]*fakeremote.Runner
}

func (c *probeCluster) Runner(_ context.Context, t kubeaccess.Target) (kubeaccess.PodRunner, kubeaccess.NodeMatch, error) {
	p, ok := c.pods[t.Hypervisor]
	if !ok {
		return nil, kubeaccess.NodeMatch{}, errors.New("no node matches " + t.Hypervisor)
	}
	return podRunner{c.runners[p.Node], p}, kubeaccess.NodeMatch{Node: p.Node, How: "node name"}, nil
}

func (c *probeCluster) RunnerIn(_ string, p kubeaccess.Pod) (kubeaccess.PodRunner, error) {
	return podRunner{c.runners[p.Node], p}, nil
}

// Over Kubernetes the tools are probed in one OVS pod per distinct image,
// before anything is built: a missing tool with no debug image is refused
// naming the node, the pod, the image and the nodes that share it; with a
// debug image it passes (the debug pod runs it). A fleet's nodes are each
// looked up, and a node without an OVS pod is named.
func TestPreflightKubeToolsPerImage(t *testing.T) {
	s, fc, _, _ := preflightRun(t)
	fc.QuotaLimits = map[string]int{"compute/cores": -1}
	s.Config.Hypervisors = config.Hypervisors{Access: config.HypervisorAccessKubernetes}
	w := fakeremote.NewWorld()
	pod := func(node, image string) kubeaccess.Pod {
		return kubeaccess.Pod{Node: node, Namespace: "openstack", Name: "ovs-" + node, Container: "openvswitch-vswitchd", Image: image}
	}
	c := &probeCluster{pods: map[string]kubeaccess.Pod{
		"cmp-1": pod("cmp-1", "mirantis/openvswitch:3.3-a"), "cmp-2": pod("cmp-2", "mirantis/openvswitch:3.3-a"), "cmp-3": pod("cmp-3", "mirantis/openvswitch:3.1-b"),
	}, runners: map[string]*fakeremote.Runner{}}
	for n := range c.pods {
		c.runners[n] = fakeremote.New("ovs "+n, w)
	}
	c.runners["cmp-1"].On(offload.ToolsProbeCommand, probeReply("tc", "ip"))
	c.runners["cmp-3"].On(offload.ToolsProbeCommand, probeReply("tc", "tcpdump", "ip"))
	s.kube = c
	s.ovsPods = []kubeaccess.Pod{c.pods["cmp-1"], c.pods["cmp-2"], c.pods["cmp-3"]}

	err := s.Preflight(context.Background(), 1, nil)
	want := "node cmp-1 (pod openstack/ovs-cmp-1, container openvswitch-vswitchd, image mirantis/openvswitch:3.3-a, as on nodes cmp-2): the OVS container lacks tcpdump (tcpdump is not installed"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), kubeaccess.DebugImageAdvice) || strings.Contains(err.Error(), "cmp-3 (") {
		t.Errorf("got %v\nwant %q", err, want)
	}
	var probed []string
	for _, e := range w.Log() {
		probed = append(probed, e.Runner)
	}
	if strings.Join(probed, ",") != "ovs cmp-1,ovs cmp-3" {
		t.Errorf("probed %v: want one pod per image", probed)
	}
	noPOST(t, fc)

	s.Config.Hypervisors.Kubernetes.DebugImage = config.DebugImageAuto
	if err := s.Preflight(context.Background(), 1, nil); err != nil {
		t.Errorf("with a debug image: %v", err)
	}
	// A fleet: its nodes, each found; one without an OVS pod is named.
	err = s.Preflight(context.Background(), 2, []kubeaccess.Target{{Hypervisor: "cmp-3"}, {Hypervisor: "cmp-9", ServiceHost: "cmp-9"}})
	if err == nil || !strings.Contains(err.Error(), "cmp-9") || !strings.Contains(err.Error(), "its node's OVS pod: no node matches cmp-9") {
		t.Errorf("fleet: %v", err)
	}
}

// Without ethtool on the hypervisor the NIC facts are recorded as
// unknown, and that is no problem of the environment.
func TestCollectEnvironmentWithoutEthtool(t *testing.T) {
	wd := newPair(t)
	s := wd.session()
	// Without ethtool there is no bus-info, so devlink is not asked.
	hostFacts(t, wd, fakeremote.Reply{Exit: 127, Stderr: []byte("sh: 1: ethtool: not found\n")}, [2]fakeremote.Reply{})
	if err := s.CollectEnvironment(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := s.Results.Snapshot()
	if len(got.Errors) != 0 {
		t.Errorf("errors: %v", got.Errors)
	}
	for _, h := range got.Environment.Hypervisors {
		if h.NIC != "rep1" || h.NICDriver != offload.NoEthtool {
			t.Errorf("hypervisor %s: NIC %q driver %q", h.Name, h.NIC, h.NICDriver)
		}
	}
}
