package report

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The environment table names how each hypervisor was reached: the lab's
// run over Kubernetes (testdata/access-lab/README.md) its pod and container
// per hypervisor, the SSH run "ssh"; and a comparison of the two shows the
// row as a difference of the environments.
func TestEnvironmentNamesHypervisorAccess(t *testing.T) {
	kube, err := results.Load("testdata/access-lab/kube.json")
	if err != nil {
		t.Fatal(err)
	}
	ssh, err := results.Load("testdata/access-lab/ssh.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(kube)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, r := range EnvironmentRows(s) {
		if r[0] == "Hypervisor access" {
			got = r[1]
		}
	}
	want := "compute1: kubernetes: pod openstack/openvswitch-vswitchd-default-bgf4m, container openvswitch-vswitchd; " +
		"compute2: kubernetes: pod openstack/openvswitch-vswitchd-default-4dnh5, container openvswitch-vswitchd"
	if got != want {
		t.Errorf("Hypervisor access over kubernetes:\n got %q\nwant %q", got, want)
	}
	if md := Markdown(s, Options{}); !strings.Contains(md, "| Hypervisor access | "+want+" |") {
		t.Errorf("the markdown report lacks the row")
	}
	diffs := environmentDiffs(ssh, kube, "Run ID")
	found := false
	for _, d := range diffs {
		if d.Item == "Hypervisor access" {
			found = true
			if d.Accepted != "ssh" || d.Candidate != want {
				t.Errorf("difference %+v", d)
			}
		}
	}
	if !found {
		t.Errorf("the comparison of the ssh and kubernetes runs does not show the access: %+v", diffs)
	}
	// A debug pod's host tools are named too.
	h := kube.Environment.Hypervisors[0]
	h.HostToolsPod, h.HostToolsContainer = "openstack/asap2e2e-x-debug-compute1", "debug"
	if c := accessCell(h); !strings.HasSuffix(c, "; host tools in pod openstack/asap2e2e-x-debug-compute1, container debug") {
		t.Errorf("accessCell with a debug pod: %q", c)
	}
}

// A run whose OVS pod was replaced names, in the "Hypervisor access" row of
// the markdown and HTML reports, the pod found at connect and each
// replacement in order, with its time and reason; a file without
// replacements (the lab's, written before they were recorded) shows the
// pod alone, as above.
func TestHypervisorAccessNamesReplacedPods(t *testing.T) {
	kube, err := results.Load("testdata/access-lab/kube.json")
	if err != nil {
		t.Fatal(err)
	}
	h := &kube.Environment.Hypervisors[0]
	first, second, third := h.Pod, "openstack/openvswitch-vswitchd-default-vfzb2", "openstack/openvswitch-vswitchd-default-q7k2p"
	h.PodReplacements = []results.PodReplacement{
		{From: first, To: second, Node: h.Name, At: time.Date(2026, 12, 4, 12, 1, 3, 0, time.UTC), Reason: "pod vanished: NotFound"},
		{From: second, To: third, Node: h.Name, At: time.Date(2026, 12, 4, 13, 2, 4, 0, time.FixedZone("CET", 3600)), Reason: "pod vanished: being deleted"},
	}
	if err := results.Validate(kube); err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(kube)
	if err != nil {
		t.Fatal(err)
	}
	want := "compute1: kubernetes: pod " + first + ", container openvswitch-vswitchd; " +
		first + " → " + second + " at 12:01:03 UTC (pod vanished: NotFound); " +
		second + " → " + third + " at 12:02:04 UTC (pod vanished: being deleted); " +
		"compute2: kubernetes: pod openstack/openvswitch-vswitchd-default-4dnh5, container openvswitch-vswitchd"
	var got string
	for _, r := range EnvironmentRows(s) {
		if r[0] == "Hypervisor access" {
			got = r[1]
		}
	}
	if got != want {
		t.Errorf("Hypervisor access:\n got %q\nwant %q", got, want)
	}
	if md := Markdown(s, Options{}); !strings.Contains(md, "| Hypervisor access | "+want+" |") {
		t.Errorf("the markdown report lacks the row %q", want)
	}
	if page := string(HTML(s, Options{})); !strings.Contains(page, "<td>Hypervisor access</td><td>"+want+"</td>") {
		i := strings.Index(page, "Hypervisor access")
		t.Errorf("the HTML report lacks the row %q; it has:\n%s", want, page[max(i, 0):min(max(i, 0)+600, len(page))])
	}
}
