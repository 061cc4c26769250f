package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli/clitest"
)

func TestHelpAndBadFlag(t *testing.T) {
	clitest.HelpConvention(t, func(args []string, stdout, stderr io.Writer) int {
		return run(context.Background(), args, stdout, stderr)
	})
}

// kubeconfig is a kubeconfig as kubectl writes it, one context "mosk".
const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: mosk
  cluster:
    server: https://198.18.30.1:6443
users:
- name: re
  user:
    token: not-a-real-token
contexts:
- name: mosk
  context: {cluster: mosk, user: re}
current-context: mosk
`

// writeConfig writes a harness config with access kubernetes, the given
// context and extra hypervisors block lines, and its files.
func writeConfig(t *testing.T, context, extra string) string {
	t.Helper()
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"id_ed25519": string(pem.EncodeToMemory(block)), "id_ed25519.pub": string(ssh.MarshalAuthorizedKey(sshPub)), "kubeconfig": kubeconfig}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `run:
  expected_path: asap2
cloud:
  tenant: mosk
  admin: mosk-admin
image:
  name: ubuntu
flavor:
  name: m1.large
network:
  cidr: 198.18.10.0/24
guest_access:
  management_network: mgmt
  user: ubuntu
ssh:
  private_key: id_ed25519
placement:
  hosts: [cmp-1.mosk.example.net, cmp-2.mosk.example.net]
hypervisors:
  access: kubernetes
  kubernetes:
    kubeconfig: kubeconfig
    context: ` + context + "\n" + extra
	path := filepath.Join(dir, "mosk.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A context the kubeconfig does not have fails at once, naming the file,
// the context and the key.
func TestKubeconfigProblemsAreNamed(t *testing.T) {
	path := writeConfig(t, "mosk-admin@mosk", "")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{path}, &out, &errb)
	kc := filepath.Join(filepath.Dir(path), "kubeconfig")
	if code != 1 || !strings.Contains(out.String(), "FAIL "+path+": kubernetes: kubeconfig "+kc+", context mosk-admin@mosk (hypervisors.kubernetes.kubeconfig, context)") ||
		!strings.Contains(out.String(), `context "mosk-admin@mosk" does not exist`) {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
}

type fakeCluster struct {
	in kubeaccess.PreflightInput
	k  config.Kubernetes
	o  kubeaccess.Options
	r  kubeaccess.PreflightReport
	// probe is ToolsProbeCommand's output in every pod; probed the pods
	// it ran in.
	probe  string
	probed []string
}

func (f *fakeCluster) Preflight(_ context.Context, in kubeaccess.PreflightInput) kubeaccess.PreflightReport {
	f.in = in
	return f.r
}

func (f *fakeCluster) RunnerIn(_ string, p kubeaccess.Pod) (kubeaccess.PodRunner, error) {
	return podRunner{f, p}, nil
}

// podRunner answers the tools probe in its pod.
type podRunner struct {
	f   *fakeCluster
	pod kubeaccess.Pod
}

func (r podRunner) Name() string        { return r.pod.String() }
func (r podRunner) Pod() kubeaccess.Pod { return r.pod }
func (r podRunner) Run(_ context.Context, cmd string) (remote.Result, error) {
	if cmd != offload.ToolsProbeCommand {
		return remote.Result{ExitCode: 127}, nil
	}
	r.f.probed = append(r.f.probed, r.pod.Node)
	return remote.Result{Target: r.Name(), Cmd: cmd, Stdout: []byte(r.f.probe)}, nil
}
func (r podRunner) Start(context.Context, string) (remote.Process, error) {
	return nil, errors.New("podRunner: no background commands")
}

// The host tools are probed in one OVS pod per image; a missing tool with
// no debug image fails naming the node and the tool, ethtool is optional.
func TestToolsProbe(t *testing.T) {
	probe := func(missing ...string) string {
		var b strings.Builder
		for _, n := range []string{"tc", "tcpdump", "timeout", "ethtool", "ip", "ip-stats", "setsid"} {
			if slices.Contains(missing, n) {
				fmt.Fprintf(&b, "asap2e2e-probe %s 127 sh: 1: %s: not found\n", n, n)
			} else {
				fmt.Fprintf(&b, "asap2e2e-probe %s 0 ok\n", n)
			}
		}
		return b.String()
	}
	pods := []kubeaccess.Pod{{Node: "cmp-1", Namespace: "openstack", Name: "ovs-a", Container: "ovs", Image: "ovs:1"}, {Node: "cmp-2", Namespace: "openstack", Name: "ovs-b", Container: "ovs", Image: "ovs:1"}}
	f := &fakeCluster{r: kubeaccess.PreflightReport{Source: "k", Pods: pods}, probe: probe("tcpdump", "ethtool")}
	old := newCluster
	t.Cleanup(func() { newCluster = old })
	newCluster = func(config.Kubernetes, kubeaccess.Options) (preflighter, error) { return f, nil }
	path := writeConfig(t, "mosk", "")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{path}, &out, &errb); code != 1 ||
		!strings.Contains(out.String(), "FAIL node cmp-1 (pod openstack/ovs-a, container ovs, image ovs:1, as on nodes cmp-2): the OVS container lacks tcpdump (tcpdump is not installed") ||
		strings.Contains(out.String(), "lacks tcpdump (tcpdump is not installed (exit 127: sh: 1: tcpdump: not found)), ethtool") {
		t.Errorf("exit %d, stdout:\n%s", code, out.String())
	}
	if !reflect.DeepEqual(f.probed, []string{"cmp-1"}) {
		t.Errorf("probed %v, want one pod per image", f.probed)
	}
	f.probe = probe("ethtool")
	out.Reset()
	if code := run(context.Background(), []string{path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "no ethtool (optional") {
		t.Errorf("ethtool alone missing: exit %d, stdout:\n%s", code, out.String())
	}
}

func TestChecksAndExitCodes(t *testing.T) {
	f := &fakeCluster{r: kubeaccess.PreflightReport{Source: "kubeconfig k, context mosk", Checks: []kubeaccess.Check{
		{What: "list pods in namespace openstack"},
		{What: "hypervisor cmp-3", Problem: "kubernetes: hypervisor cmp-3: no Kubernetes node matches"},
	}, Warnings: []string{"the token of kubeconfig k, context mosk expires in 1h0m0s"}}}
	old := newCluster
	t.Cleanup(func() { newCluster = old })
	newCluster = func(k config.Kubernetes, o kubeaccess.Options) (preflighter, error) { f.k, f.o = k, o; return f, nil }
	path := writeConfig(t, "mosk", "    debug_image: registry.example/netshoot:v0.13\n")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{path, "cmp-3.mosk.example.net=cmp-3"}, &out, &errb)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, w := range []string{"credentials: kubeconfig k, context mosk\n", "ok   list pods in namespace openstack\n", "FAIL kubernetes: hypervisor cmp-3: no Kubernetes node matches\n",
		"WARN the token of kubeconfig k, context mosk expires in 1h0m0s\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, out.String())
		}
	}
	if !strings.Contains(errb.String(), "1 of 2 checks failed") {
		t.Errorf("stderr %q", errb.String())
	}
	// The run's budget, against which a token's expiry is warned of.
	if f.in.RunBudget <= 0 {
		t.Errorf("preflight asked with run budget %v, want plan.RunBudget's", f.in.RunBudget)
	}
	want := []kubeaccess.Target{{Hypervisor: "cmp-1.mosk.example.net"}, {Hypervisor: "cmp-2.mosk.example.net"}, {Hypervisor: "cmp-3.mosk.example.net", ServiceHost: "cmp-3"}}
	if !reflect.DeepEqual(f.in.Hypervisors, want) {
		t.Errorf("targets %+v, want %+v", f.in.Hypervisors, want)
	}
	if f.in.DebugPod == nil || f.in.DebugPod.Image != "registry.example/netshoot:v0.13" || f.in.DebugPod.Name != "asap2e2e-kubecheck-debug" {
		t.Errorf("debug pod %+v", f.in.DebugPod)
	}
	if f.o.API != config.DefaultIntervals[config.IntervalKubeAPI] || f.k.Namespace != "openstack" {
		t.Errorf("cluster options %+v, config %+v", f.o, f.k)
	}
	f.r.Checks = f.r.Checks[:1]
	out.Reset()
	if code := run(context.Background(), []string{path}, &out, &errb); code != 0 {
		t.Errorf("all passed: exit %d\n%s", code, out.String())
	}
	if code := run(context.Background(), []string{path, "=cmp-3"}, &out, &errb); code != 2 {
		t.Errorf("an argument without a hypervisor: exit %d", code)
	}
}
