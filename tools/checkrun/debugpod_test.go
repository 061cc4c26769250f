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

const fqdnRun = "testdata/debug-pod-fqdn"

func TestDebugPodRecordedRun(t *testing.T) {
	var out, errOut bytes.Buffer
	if rc := run([]string{"debug-pod", fqdnRun}, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", rc, out.String(), errOut.String())
	}
	for _, want := range []string{
		"hypervisor compute1.asap2lab.test: tcpdump not found in hypervisor compute1.asap2lab.test (pod openstack/openvswitch-vswitchd-default-ngsd7, container openvswitch-vswitchd) (probe exit 127); 2 capture(s) ran in hypervisor compute1.asap2lab.test (pod openstack/asap2e2e-20261204t200928-2e08-debug-compute1, container debug)",
		"hypervisor compute2.asap2lab.test: tcpdump not found",
		"ok: run debug-pod-fqdn ran tcpdump in a node debug pod",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// copyRun is the recorded run with edit applied to one of its files.
func copyRun(t *testing.T, file string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"results.json", "harness.log", "commands.jsonl"} {
		data, err := os.ReadFile(filepath.Join(fqdnRun, name))
		if err != nil {
			t.Fatal(err)
		}
		body := string(data)
		if name == file {
			body = edit(body)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDebugPodEachEvidenceCounts(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"the probe found tcpdump", "commands.jsonl", "asap2e2e-probe tcpdump 127 ", "asap2e2e-probe tcpdump 0 ",
			"no tools probe in hypervisor compute1.asap2lab.test (pod openstack/openvswitch-vswitchd-default-ngsd7, container openvswitch-vswitchd) found tcpdump missing"},
		{"the captures failed", "commands.jsonl", `"exit_code":0`, `"exit_code":1`,
			"no capture (tcpdump -nn) ran in hypervisor compute2.asap2lab.test (pod openstack/asap2e2e-20261204t200928-2e08-debug-compute2, container debug) with exit 0"},
		{"harness.log silent", "harness.log", "the OVS container lacks tcpdump", "the OVS container has it",
			`harness.log does not say "compute1.asap2lab.test: the OVS container lacks tcpdump"`},
		{"no pod recorded", "results.json", `"host_tools_pod": "openstack/asap2e2e-20261204t200928-2e08-debug-compute2"`, `"host_tools_pod": ""`,
			`hypervisor compute2.asap2lab.test: results.json: host_tools_pod ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRun(t, tc.file, func(s string) string {
				if !strings.Contains(s, tc.old) {
					t.Fatalf("%s has no %q", tc.file, tc.old)
				}
				return strings.ReplaceAll(s, tc.old, tc.new)
			})
			var out, errOut bytes.Buffer
			if rc := run([]string{"debug-pod", dir}, &out, &errOut); rc != 1 || !strings.Contains(out.String(), tc.want) {
				t.Errorf("exit %d, want 1 and %q:\n%s%s", rc, tc.want, out.String(), errOut.String())
			}
		})
	}
}

func TestNodeMappingRecordedRun(t *testing.T) {
	var out, errOut bytes.Buffer
	if rc := run([]string{"node-mapping", fqdnRun, "asap2lab.test"}, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", rc, out.String(), errOut.String())
	}
	for _, want := range []string{
		"hypervisor compute1.asap2lab.test → node compute1 (service host), pod openstack/openvswitch-vswitchd-default-ngsd7",
		"hypervisor compute2.asap2lab.test → node compute2 (service host), pod openstack/openvswitch-vswitchd-default-nwwkh",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if rc := run([]string{"node-mapping", fqdnRun, "cluster.local"}, &out, &errOut); rc != 1 ||
		!strings.Contains(out.String(), `hypervisor "compute1.asap2lab.test": not a host name in domain cluster.local`) {
		t.Errorf("another domain: exit %d:\n%s", rc, out.String())
	}
	// matched by another rule than the service host: refused
	dir := copyRun(t, "harness.log", func(s string) string {
		return strings.ReplaceAll(s, "(matched by service host)", "(matched by hypervisors.kubernetes.node_names)")
	})
	out.Reset()
	if rc := run([]string{"node-mapping", dir, "asap2lab.test"}, &out, &errOut); rc != 1 || !strings.Contains(out.String(), "harness.log does not say") {
		t.Errorf("mapped by node_names: exit %d:\n%s", rc, out.String())
	}
}
