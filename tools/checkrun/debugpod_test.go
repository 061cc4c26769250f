package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedKubeRun is a run directory holding testdata/same-verdicts/kube's
// results.json (a real run over Kubernetes before the lab's OVS containers
// lacked tcpdump: every tool in the OVS container, no debug pod) with the
// given harness.log and commands.jsonl.
func recordedKubeRun(t *testing.T, harnessLog, commands string) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "same-verdicts", "kube", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"results.json": string(data), "harness.log": harnessLog, "commands.jsonl": commands} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDebugPodRefusesARunWithoutOne(t *testing.T) {
	dir := recordedKubeRun(t, "", "")
	var out, errOut bytes.Buffer
	if rc := run([]string{"debug-pod", dir}, &out, &errOut); rc != 1 {
		t.Fatalf("exit %d, want 1; %s%s", rc, out.String(), errOut.String())
	}
	for _, want := range []string{
		"NO DEBUG POD: hypervisor compute1: results.json: ovs_container_tools [tc tcpdump ethtool ip] has tcpdump",
		"NO DEBUG POD: hypervisor compute1: results.json: host_tools_pod \"\"",
		"NO DEBUG POD: hypervisor compute2: results.json: host_tools_pod \"\"",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "ok:") {
		t.Errorf("ok line on a failed assertion:\n%s", out.String())
	}
}

func TestDebugPodUnreadable(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := recordedKubeRun(t, "", "{not json\n")
	if rc := run([]string{"debug-pod", dir}, &out, &errOut); rc != 2 || !strings.Contains(errOut.String(), "commands.jsonl:1:") {
		t.Errorf("exit %d, stderr %q; want 2 naming commands.jsonl:1", rc, errOut.String())
	}
	if rc := run([]string{"debug-pod", t.TempDir()}, &out, &errOut); rc != 2 {
		t.Errorf("empty dir: exit %d, want 2", rc)
	}
}

func TestNodeMappingRefusesShortNames(t *testing.T) {
	// The recorded run's hypervisors are compute1, compute2 (the lab without
	// LAB_HV_DOMAIN): not FQDNs of asap2lab.test.
	dir := recordedKubeRun(t, "", "")
	var out, errOut bytes.Buffer
	if rc := run([]string{"node-mapping", dir, "asap2lab.test"}, &out, &errOut); rc != 1 {
		t.Fatalf("exit %d, want 1; %s%s", rc, out.String(), errOut.String())
	}
	for _, want := range []string{
		`NOT MAPPED BY SERVICE HOST: hypervisor "compute1": not a host name in domain asap2lab.test`,
		`NOT MAPPED BY SERVICE HOST: hypervisor "compute2": not a host name in domain asap2lab.test`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
