package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// replacedHypervisor is a hypervisor reached over Kubernetes whose OVS pod
// was replaced twice during the run.
func replacedHypervisor() Hypervisor {
	return Hypervisor{Name: "compute1", Transport: "kubernetes", Pod: "openstack/ovs-a", Container: "openvswitch-vswitchd",
		PodReplacements: []PodReplacement{
			{From: "openstack/ovs-a", To: "openstack/ovs-b", Node: "compute1", At: time.Date(2026, 12, 4, 12, 1, 3, 0, time.UTC), Reason: "pod vanished: NotFound"},
			{From: "openstack/ovs-b", To: "openstack/ovs-c", Node: "compute1", At: time.Date(2026, 12, 4, 12, 7, 40, 0, time.UTC), Reason: "pod vanished: being deleted"},
		}}
}

// The replacements are written under environment.hypervisors[].
// pod_replacements with their keys, read back as written, and a snapshot
// does not share them with the writer.
func TestPodReplacementsRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results.json")
	h := replacedHypervisor()
	w, err := NewWriter(file, Results{SchemaVersion: SchemaVersion, RunID: "r1", Config: ConfigSummary{ExpectedPath: PathASAP2},
		Environment: Environment{Hypervisors: []Hypervisor{h, {Name: "compute2", Transport: "kubernetes", Pod: "openstack/ovs-z", Container: "openvswitch-vswitchd"}}}})
	if err != nil {
		t.Fatal(err)
	}
	pretty, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, pretty); err != nil {
		t.Fatal(err)
	}
	raw := compact.String()
	for _, want := range []string{`"pod":"openstack/ovs-a"`, `"pod_replacements":[{"from":"openstack/ovs-a","to":"openstack/ovs-b","node":"compute1","at":"2026-12-04T12:01:03Z","reason":"pod vanished: NotFound"}`} {
		if !strings.Contains(raw, want) {
			t.Errorf("results.json lacks %s:\n%s", want, raw)
		}
	}
	if strings.Count(raw, "pod_replacements") != 1 {
		t.Errorf("pod_replacements written for the hypervisor without any:\n%s", raw)
	}
	r, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Environment.Hypervisors[0]; !reflect.DeepEqual(got, h) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, h)
	}
	if r.Environment.Hypervisors[1].PodReplacements != nil {
		t.Errorf("compute2: %+v", r.Environment.Hypervisors[1].PodReplacements)
	}
	snap := w.Snapshot()
	snap.Environment.Hypervisors[0].PodReplacements[0].To = "openstack/changed"
	if got := w.Snapshot().Environment.Hypervisors[0].PodReplacements[0].To; got != "openstack/ovs-b" {
		t.Errorf("a snapshot's change reached the writer: %q", got)
	}
}

// A file written before the replacements were recorded (the lab's real
// run over Kubernetes, e2e/report/testdata/access-lab/README.md) loads
// unchanged: the pod found at connect, no replacements.
func TestOldFileWithoutPodReplacementsLoads(t *testing.T) {
	r, err := Load(filepath.Join("..", "report", "testdata", "access-lab", "kube.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Environment.Hypervisors) != 2 {
		t.Fatalf("hypervisors %+v", r.Environment.Hypervisors)
	}
	for _, h := range r.Environment.Hypervisors {
		if h.Transport != "kubernetes" || !strings.HasPrefix(h.Pod, "openstack/openvswitch-vswitchd-") || h.PodReplacements != nil {
			t.Errorf("%s: transport %q, pod %q, replacements %+v", h.Name, h.Transport, h.Pod, h.PodReplacements)
		}
	}
}

// Replacements that do not chain from the pod found at connect, or lack a
// pod, node, time or reason, are refused, every problem at once.
func TestPodReplacementsValidation(t *testing.T) {
	bad := replacedHypervisor()
	bad.PodReplacements[0].Node, bad.PodReplacements[0].At = "", time.Time{}
	bad.PodReplacements[1].From, bad.PodReplacements[1].Reason = "openstack/ovs-x", ""
	noPod := replacedHypervisor()
	noPod.Name, noPod.Pod = "compute2", ""
	same := replacedHypervisor()
	same.PodReplacements = same.PodReplacements[:1]
	same.PodReplacements[0].To = "openstack/ovs-a"
	err := Validate(&Results{SchemaVersion: SchemaVersion, RunID: "r1", Environment: Environment{Hypervisors: []Hypervisor{bad, noPod, same}}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"environment.hypervisors[0].pod_replacements[0].node: must be set",
		"environment.hypervisors[0].pod_replacements[0].at: must be set",
		`environment.hypervisors[0].pod_replacements[1].from: must be "openstack/ovs-b" (environment.hypervisors[0].pod_replacements[0].to), where the commands ran, got "openstack/ovs-x"`,
		"environment.hypervisors[0].pod_replacements[1].reason: must be set",
		"environment.hypervisors[1].pod_replacements: need the pod found at connect (environment.hypervisors[1].pod), which is not set",
		`environment.hypervisors[2].pod_replacements[0].to: must be another pod than from, got "openstack/ovs-a"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "; ") + 1; n != 6 {
		t.Errorf("%d problems, want 6: %v", n, err)
	}
	if err := Validate(&Results{SchemaVersion: SchemaVersion, RunID: "r1", Environment: Environment{Hypervisors: []Hypervisor{replacedHypervisor()}}}); err != nil {
		t.Errorf("a valid chain: %v", err)
	}
}
