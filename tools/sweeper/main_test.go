package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kube"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
	"github.com/mosk-qa/asap2-e2e/fixtures/fakecloud"
)

// testSecret stands for a password the clients know (the Redactor of
// cloud.NewClients holds the clouds.yaml / secure.yaml credentials).
const testSecret = "Sweeper-Pa55word-e71b"

// The cloud is fixtures/fakecloud (Nova/Neutron JSON shapes as in
// gophercloud v2.16.0's testing fixtures); a kept topology of run "r1" is
// built on it with fixtures.Provision, next to foreign resources.
func setup(t *testing.T) (*fakecloud.Cloud, clientsFunc) {
	t.Helper()
	c := fakecloud.New()
	t.Cleanup(c.Close)
	c.AddImage("img")
	c.AddNetwork("mgmt", "198.19.200.0/24", false)
	c.Add("networks", fakecloud.Obj{"name": "prod-net"})
	c.Add("keypairs", fakecloud.Obj{"name": "alice", "public_key": "ssh-ed25519 AAA"})
	fast := wait.Interval{Timeout: 10 * time.Second, Poll: time.Millisecond}
	cfg := &config.Config{
		Run:         config.Run{NamePrefix: "asap2e2e", ExpectedPath: results.PathASAP2},
		Image:       config.Image{Name: "img"},
		Flavor:      config.Flavor{Name: "perf", Create: true, VCPUs: 4, RAMMB: 4096, DiskGB: 10},
		Network:     config.Network{CIDR: "198.18.10.0/24"},
		DataPort:    config.DataPort{BindingProfile: config.ProfileNova},
		GuestAccess: config.GuestAccess{Mode: config.AccessManagementNetwork, ManagementNetwork: "mgmt"},
		Intervals:   map[string]wait.Interval{"server_active": fast, "port_active": fast, "delete": fast},
	}
	clients := fixtures.Clients{Compute: c.Compute(), Network: c.Network(), Image: c.Image(), AdminCompute: c.AdminCompute(), AdminNetwork: c.AdminNetwork()}
	_, err := fixtures.Provision(context.Background(), fixtures.ProvisionInput{
		Clients: clients, Config: cfg, RunID: "r1", Keep: true, SSHPublicKey: "ssh-ed25519 AAA test",
	})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(_ context.Context, cc config.Cloud, _ wait.Interval, _ func(string, ...any)) (fixtures.Clients, *cloud.Redactor, error) {
		if cc.Tenant != "asap2lab" {
			t.Errorf("tenant entry = %q, want asap2lab", cc.Tenant)
		}
		return clients, cloud.NewRedactor(testSecret), nil
	}
	return c, mk
}

func TestSweeperDryRunThenDelete(t *testing.T) {
	c, mk := setup(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--cloud", "asap2lab", "--run-id", "r1"}, &out, &errb, mk)
	if code != 1 {
		t.Fatalf("dry run exit = %d, want 1 (something left); stderr:\n%s", code, errb.String())
	}
	var rep fixtures.SweepReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out.String())
	}
	// keypair, flavor, network, subnet, 2 mgmt + 2 data ports, group, 2 servers
	if !rep.DryRun || rep.Left != 11 || len(rep.Resources) != 11 {
		t.Fatalf("dry run report: dry=%t left=%d resources=%d", rep.DryRun, rep.Left, len(rep.Resources))
	}
	if c.Count("servers") != 2 {
		t.Fatalf("dry run deleted servers")
	}
	if !strings.Contains(errb.String(), "add --delete") {
		t.Errorf("no hint on stderr:\n%s", errb.String())
	}

	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"--cloud", "asap2lab", "--run-id", "r1", "--delete"}, &out, &errb, mk)
	if code != 0 {
		t.Fatalf("delete exit = %d, want 0; stderr:\n%s", code, errb.String())
	}
	for _, kind := range []string{"servers", "ports", "os-server-groups", "flavors"} {
		if n := c.Count(kind); n != 0 {
			t.Errorf("%d %s left: %v", n, kind, c.Names(kind))
		}
	}
	if got := strings.Join(c.Names("networks"), ","); got != "mgmt,prod-net" {
		t.Errorf("networks after sweep = %s", got)
	}
	if got := strings.Join(c.Names("keypairs"), ","); got != "alice" {
		t.Errorf("keypairs after sweep = %s", got)
	}
}

func TestSweeperReadsConfigAndRejectsBadUsage(t *testing.T) {
	_, mk := setup(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "harness.yaml")
	if err := os.WriteFile(path, []byte("cloud:\n  tenant: asap2lab\nrun:\n  name_prefix: asap2e2e\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--config", path, "--all"}, &out, &errb, mk); code != 1 {
		t.Errorf("--config --all dry run exit = %d, want 1; stderr:\n%s", code, errb.String())
	}
	for _, args := range [][]string{
		{"--cloud", "asap2lab"},                           // no selector
		{"--cloud", "asap2lab", "--all", "--run-id", "x"}, // two selectors
		{"--cloud", "asap2lab", "--all", "extra"},
		{"--config", filepath.Join(dir, "missing.yaml"), "--all"},
	} {
		errb.Reset()
		if code := run(context.Background(), args, &out, &errb, mk); code != 2 {
			t.Errorf("%q: exit = %d, want 2; stderr:\n%s", args, code, errb.String())
		}
	}
}

// A delete refused with a body that echoes a credential (a proxy or a
// misbehaving API can do that): the secret is in neither the log nor the
// JSON report, while the failure itself is.
func TestSweeperRedactsSecrets(t *testing.T) {
	c, mk := setup(t)
	c.Faults = []*fakecloud.Fault{{Method: "DELETE", Path: regexp.MustCompile(`^os-keypairs/`), Status: 403,
		Body: `{"forbidden": {"code": 403, "message": "policy refused for password ` + testSecret + `"}}`}}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--cloud", "asap2lab", "--run-id", "r1", "--delete"}, &out, &errb, mk)
	if code != 1 {
		t.Errorf("exit = %d, want 1 (the keypair is left); stderr:\n%s", code, errb.String())
	}
	for what, text := range map[string]string{"stderr": errb.String(), "report": out.String()} {
		if strings.Contains(text, testSecret) {
			t.Errorf("%s leaks the password:\n%s", what, text)
		}
		if !strings.Contains(text, "policy refused for password "+cloud.Mask) {
			t.Errorf("%s lacks the redacted failure:\n%s", what, text)
		}
	}
}

// With hypervisors.access: kubernetes the node debug pods of the run are
// found by their labels (client-go's fake clientset) and deleted with the
// rest; another run's pod stays.
func TestSweeperFindsDebugPods(t *testing.T) {
	_, mk := setup(t)
	pod := func(run string) *corev1.Pod {
		return kube.DebugPodSpec("openstack", kubeaccess.DebugPodInput{Name: "asap2e2e-" + run + "-debug-cmp-1", Prefix: "asap2e2e", RunID: run, Node: "cmp-1", Image: "img"})
	}
	cs := k8sfake.NewClientset(pod("r1"), pod("r2"))
	var gotK config.Kubernetes
	old := newKube
	newKube = func(k config.Kubernetes, _ config.Interval) (debugPodSweeper, error) {
		gotK = k
		return kube.NewClusterForClient(cs, k, kubeaccess.Options{}), nil
	}
	t.Cleanup(func() { newKube = old })
	path := filepath.Join(t.TempDir(), "mosk.yaml")
	if err := os.WriteFile(path, []byte("cloud:\n  tenant: asap2lab\nhypervisors:\n  access: kubernetes\n  kubernetes:\n    debug_image: img\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--config", path, "--run-id", "r1"}, &out, &errb, mk); code != 1 {
		t.Fatalf("dry run exit %d; stderr:\n%s", code, errb.String())
	}
	if gotK.Namespace != "openstack" {
		t.Errorf("kubernetes block %+v, want the defaults applied", gotK)
	}
	var rep fixtures.SweepReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var pods []fixtures.SweptResource
	for _, r := range rep.Resources {
		if r.Kind == kube.KindDebugPod {
			pods = append(pods, r)
		}
	}
	if len(pods) != 1 || pods[0].ID != "openstack/asap2e2e-r1-debug-cmp-1" || pods[0].Action != "would delete" || rep.Left != 12 {
		t.Fatalf("debug pods in the report %+v, left %d (want 11 cloud resources + 1 pod)", pods, rep.Left)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"--config", path, "--run-id", "r1", "--delete"}, &out, &errb, mk); code != 0 {
		t.Fatalf("delete exit %d; stderr:\n%s", code, errb.String())
	}
	left, err := cs.CoreV1().Pods("openstack").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 1 || left.Items[0].Name != "asap2e2e-r2-debug-cmp-1" {
		t.Errorf("pods left %+v, want only run r2's", left.Items)
	}
}

// The Kubernetes side is swept when the OpenStack side cannot be: clients
// that fail (Keystone down), and no tenant cloud at all. The report holds
// the pods; the exit code says a side failed.
func TestSweeperReachesKubernetesWhenOpenStackFails(t *testing.T) {
	cs := k8sfake.NewClientset(kube.DebugPodSpec("openstack", kubeaccess.DebugPodInput{Name: "asap2e2e-r1-debug-cmp-1", Prefix: "asap2e2e", RunID: "r1", Node: "cmp-1", Image: "img"}))
	old := newKube
	newKube = func(k config.Kubernetes, _ config.Interval) (debugPodSweeper, error) {
		return kube.NewClusterForClient(cs, k, kubeaccess.Options{}), nil
	}
	t.Cleanup(func() { newKube = old })
	down := func(context.Context, config.Cloud, config.Interval, func(string, ...any)) (fixtures.Clients, *cloud.Redactor, error) {
		return fixtures.Clients{}, nil, errors.New("authenticating with Keystone: 503 Service Unavailable")
	}
	dir := t.TempDir()
	for name, tenant := range map[string]string{"keystone down": "cloud:\n  tenant: mosk\n", "no tenant cloud": ""} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(config.EnvCloud, "")
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tenant+"hypervisors:\n  access: kubernetes\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"--config", path, "--run-id", "r1"}, &out, &errb, down)
			if code != 2 {
				t.Errorf("exit %d, want 2 (a side failed); stderr:\n%s", code, errb.String())
			}
			if !strings.Contains(errb.String(), "sweeper: OpenStack not swept: ") {
				t.Errorf("stderr does not say OpenStack was not swept:\n%s", errb.String())
			}
			var rep fixtures.SweepReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("no report: %v\n%s", err, out.String())
			}
			if len(rep.Resources) != 1 || rep.Resources[0].ID != "openstack/asap2e2e-r1-debug-cmp-1" || rep.Left != 1 || rep.Selector != "run_id=r1" {
				t.Errorf("report %+v", rep)
			}
		})
	}
}
