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
	out := wantRun(t, 1, []string{
		"NO DEBUG POD: hypervisor compute1: results.json: ovs_container_tools [tc tcpdump ethtool ip] has tcpdump",
		"NO DEBUG POD: hypervisor compute1: results.json: host_tools_pod \"\"",
		"NO DEBUG POD: hypervisor compute2: results.json: host_tools_pod \"\"",
	}, "debug-pod", recordedKubeRun(t, "", ""))
	if strings.Contains(out, "ok:") {
		t.Errorf("ok line on a failed assertion:\n%s", out)
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
	wantRun(t, 1, []string{
		`NOT MAPPED BY SERVICE HOST: hypervisor "compute1": not a host name in domain asap2lab.test`,
		`NOT MAPPED BY SERVICE HOST: hypervisor "compute2": not a host name in domain asap2lab.test`,
	}, "node-mapping", recordedKubeRun(t, "", ""), "asap2lab.test")
}

const fqdnRun = "testdata/debug-pod-fqdn"

func TestDebugPodRecordedRun(t *testing.T) {
	wantRun(t, 0, []string{
		"hypervisor compute1.asap2lab.test: tcpdump not found in hypervisor compute1.asap2lab.test (pod openstack/openvswitch-vswitchd-default-ngsd7, container openvswitch-vswitchd) (probe exit 127); 2 capture(s) ran in hypervisor compute1.asap2lab.test (pod openstack/asap2e2e-20261204t200928-2e08-debug-compute1, container debug)",
		"hypervisor compute2.asap2lab.test: tcpdump not found",
		"ok: run debug-pod-fqdn ran tcpdump in a node debug pod",
	}, "debug-pod", fqdnRun)
}

// copyRun is the recorded run with edit applied to one of its files.
func copyRun(t *testing.T, file string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, fqdnRun, dir)
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(edit(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wantRun runs checkrun with args and requires exit code rc and every one
// of wants in its output; it returns the output.
func wantRun(t *testing.T, rc int, wants []string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if got := run(args, &out, &errOut); got != rc {
		t.Fatalf("checkrun %s: exit %d, want %d:\n%s%s", strings.Join(args, " "), got, rc, out.String(), errOut.String())
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("checkrun %s: output lacks %q:\n%s", strings.Join(args, " "), want, out.String())
		}
	}
	return out.String()
}

func TestDebugPodEachEvidenceCounts(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"the probe found tcpdump", "commands.jsonl", "asap2e2e-probe tcpdump 127 ", "asap2e2e-probe tcpdump 0 ",
			"no tools probe in hypervisor compute1.asap2lab.test (pod openstack/openvswitch-vswitchd-default-ngsd7, container openvswitch-vswitchd) found tcpdump missing"},
		{"the captures failed", "commands.jsonl", `"exit_code":0`, `"exit_code":1`,
			"no capture (tcpdump -nn) ran to its end in hypervisor compute2.asap2lab.test (pod openstack/asap2e2e-20261204t200928-2e08-debug-compute2, container debug)"},
		{"the captures printed no summary", "commands.jsonl", `packets captured`, `packets lost`,
			"no capture (tcpdump -nn) ran to its end in hypervisor compute2.asap2lab.test"},
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
			wantRun(t, 1, []string{tc.want}, "debug-pod", dir)
		})
	}
}

func TestNodeMappingRecordedRun(t *testing.T) {
	wantRun(t, 0, []string{
		"hypervisor compute1.asap2lab.test → node compute1 (service host), pod openstack/openvswitch-vswitchd-default-ngsd7",
		"hypervisor compute2.asap2lab.test → node compute2 (service host), pod openstack/openvswitch-vswitchd-default-nwwkh",
	}, "node-mapping", fqdnRun, "asap2lab.test")
	// another domain
	wantRun(t, 1, []string{`hypervisor "compute1.asap2lab.test": not a host name in domain cluster.local`},
		"node-mapping", fqdnRun, "cluster.local")
	// matched by another rule than the service host: refused
	dir := copyRun(t, "harness.log", func(s string) string {
		return strings.ReplaceAll(s, "(matched by service host)", "(matched by hypervisors.kubernetes.node_names)")
	})
	wantRun(t, 1, []string{"harness.log does not say"}, "node-mapping", dir, "asap2lab.test")
}

// A capture ended by its window (timeout's exit 124, tcpdump's summary
// printed) is a capture that ran: on a loaded machine the 10,000-packet
// count is not reached in 3 s (CI, 2026-12-05: compute1's both captures).
func TestDebugPodWindowEndedCaptures(t *testing.T) {
	wantRun(t, 0, []string{
		"hypervisor compute1: tcpdump not found in hypervisor compute1 (pod openstack/openvswitch-vswitchd-default-mk6tx, container openvswitch-vswitchd) (probe exit 127); 2 capture(s) ran in hypervisor compute1 (pod openstack/asap2e2e-20261205t131007-4b9b-debug-compute1, container debug)",
		"hypervisor compute2: tcpdump not found",
		"ok: run debug-pod-window ran tcpdump in a node debug pod",
	}, "debug-pod", "testdata/debug-pod-window")
	// Killed by the transport instead (an error recorded): not a capture.
	dir := t.TempDir()
	copyTree(t, "testdata/debug-pod-window", dir)
	data, err := os.ReadFile(filepath.Join(dir, "commands.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if strings.Contains(l, "debug-compute1") && strings.Contains(l, "tcpdump -nn") {
			l = strings.Replace(l, `"exit_code":124`, `"exit_code":124,"error":"stopped: context deadline exceeded"`, 1)
		}
		b.WriteString(l)
	}
	if err := os.WriteFile(filepath.Join(dir, "commands.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRun(t, 1, []string{"no capture (tcpdump -nn) ran to its end in hypervisor compute1 (pod openstack/asap2e2e-20261205t131007-4b9b-debug-compute1"}, "debug-pod", dir)
}
