package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The recorded runs of testdata/same-verdicts (README.md there): the lab's
// offload checks and tcp-p1 over Kubernetes and over SSH.
func TestSameVerdictsOfRecordedRuns(t *testing.T) {
	wantRun(t, 0, []string{
		"hypervisor compute1: over kubernetes, pod openstack/openvswitch-vswitchd-default-bgf4m, container openvswitch-vswitchd",
		"hypervisor compute2: over kubernetes, pod openstack/openvswitch-vswitchd-default-4dnh5, container openvswitch-vswitchd",
		"offload: check tc (udp flow): [software software] in both",
		"offload: check dpctl (tcp flow): [software software] in both",
		`profile "TCP 1 stream (-P1)": path baseline in both`,
		"run 20261204t125837-04cb (testdata/same-verdicts/kube) over kubernetes, run 20261204t130414-7304 (testdata/same-verdicts/ssh) over ssh",
		"ok: the run over kubernetes reached the verdicts of the run over ssh",
	}, "same-verdicts", "testdata/same-verdicts/ssh", "testdata/same-verdicts/kube")
}

// A flaked SSH run (its tcp flow's iperf3 lost its control socket) has
// other verdicts: every difference is named, the missing udp checks too.
func TestSameVerdictsNamesEveryDifference(t *testing.T) {
	out := wantRun(t, 1, []string{
		"DIFFERENT: offload: check tc (tcp flow) says [software software] over kubernetes, [inconclusive inconclusive] over ssh",
		"DIFFERENT: offload: check dpctl (tcp flow) says [software software] over kubernetes, [inconclusive inconclusive] over ssh",
		"DIFFERENT: offload: check counters (udp flow) ran over kubernetes only",
	}, "same-verdicts", "testdata/same-verdicts/ssh-flaked", "testdata/same-verdicts/kube")
	if strings.Contains(out, "ok: ") {
		t.Errorf("says ok:\n%s", out)
	}
	// The other way round: what ran over ssh only is a difference too.
	wantRun(t, 1, []string{"check counters (udp flow) ran over ssh but left no verdict over kubernetes"},
		"same-verdicts", "testdata/same-verdicts/kube", "testdata/same-verdicts/ssh-flaked")
}

// The transport is part of the claim: two SSH runs are not "the same
// verdicts over Kubernetes", and a run over Kubernetes must name the pod
// and container of each hypervisor.
func TestSameVerdictsNeedsTheKubernetesTransport(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"same-verdicts", "testdata/same-verdicts/ssh", "testdata/same-verdicts/ssh"}, &out, &errOut); code != 1 ||
		!strings.Contains(out.String(), `hypervisor compute1: transport "ssh", pod "", container ""; want kubernetes with a pod and a container`) {
		t.Errorf("ssh vs ssh: exit %d:\n%s", code, out.String())
	}
	// the kubernetes run with its pods erased (as a harness that forgot to record them)
	b, err := os.ReadFile("testdata/same-verdicts/kube/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, h := range m["environment"].(map[string]any)["hypervisors"].([]any) {
		delete(h.(map[string]any), "pod")
	}
	dir := t.TempDir()
	b, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"same-verdicts", "testdata/same-verdicts/ssh", dir}, &out, &errOut); code != 1 ||
		strings.Count(out.String(), `transport "kubernetes", pod "", container "openvswitch-vswitchd"`) != 2 {
		t.Errorf("kube run without pods: exit %d:\n%s", code, out.String())
	}
	// and over ssh the kubernetes run cannot stand in for the ssh one
	out.Reset()
	if code := run([]string{"same-verdicts", "testdata/same-verdicts/kube", "testdata/same-verdicts/kube"}, &out, &errOut); code != 1 ||
		!strings.Contains(out.String(), `transport "kubernetes", want ssh`) {
		t.Errorf("kube vs kube: exit %d:\n%s", code, out.String())
	}
	if code := run([]string{"same-verdicts", "testdata/same-verdicts/nonexistent", "testdata/same-verdicts/kube"}, &out, &errOut); code != 2 {
		t.Errorf("missing run directory: exit %d, want 2", code)
	}
}

// On a lab of four computes the pair over Kubernetes ran on compute3 and
// compute4, the SSH run's on compute1 and compute2: the verdicts are the
// same, and the hosts are a note, not a difference.
func TestSameVerdictsOnOtherHosts(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"same-verdicts", "testdata/same-verdicts/ssh", "testdata/same-verdicts/kube-4computes"}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "note: the pair ran on [compute1 compute2] over ssh, on [compute3 compute4] over kubernetes") {
		t.Errorf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
}
