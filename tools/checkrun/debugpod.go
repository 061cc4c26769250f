package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// runArtifacts are what debugPod and nodeMapping read of a run directory.
type runArtifacts struct {
	res  *results.Results
	log  string            // harness.log
	cmds []remote.LogEntry // commands.jsonl
}

func loadRun(runDir string) (runArtifacts, error) {
	var a runArtifacts
	res, err := results.Load(filepath.Join(runDir, "results.json"))
	if err != nil {
		return a, err
	}
	a.res = res
	data, err := os.ReadFile(filepath.Join(runDir, "harness.log"))
	if err != nil {
		return a, err
	}
	a.log = string(data)
	path := filepath.Join(runDir, "commands.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return a, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var e remote.LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return a, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		a.cmds = append(a.cmds, e)
	}
	if err := sc.Err(); err != nil {
		return a, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// podTarget is the command log's target of hypervisor hv's commands in
// pod ns/name, container c (kube's runner name).
func podTarget(hv, pod, container string) string {
	return fmt.Sprintf("hypervisor %s (pod %s, container %s)", hv, pod, container)
}

// debugPod returns every way in which the run did not run tcpdump in a node
// debug pod because the OVS container lacks it: per hypervisor over
// Kubernetes, the probe in the OVS container found tcpdump missing (exit
// 127, in commands.jsonl), harness.log says so and that tcpdump runs in
// the debug pod, results.json names that pod and container
// (host_tools_pod, host_tools_container) and not tcpdump among the OVS
// container's tools,
// and a capture (`tcpdump -nn`) ran there to its end (captureEnded).
func debugPod(runDir string) (lines, problems []string, err error) {
	a, err := loadRun(runDir)
	if err != nil {
		return nil, nil, err
	}
	hvs := a.res.Environment.Hypervisors
	if len(hvs) == 0 {
		problems = append(problems, runDir+": no hypervisor recorded in results.json")
	}
	for _, h := range hvs {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("hypervisor %s: ", h.Name)+fmt.Sprintf(format, args...))
		}
		if h.Transport != "kubernetes" || h.Pod == "" {
			bad("transport %q, pod %q: not reached over Kubernetes", h.Transport, h.Pod)
			continue
		}
		if slices.Contains(h.OVSContainerTools, "tcpdump") {
			bad("results.json: ovs_container_tools %v has tcpdump: the OVS container did not lack it", h.OVSContainerTools)
		}
		if h.HostToolsPod == "" || h.HostToolsContainer == "" {
			bad("results.json: host_tools_pod %q, host_tools_container %q; want a debug pod and its container", h.HostToolsPod, h.HostToolsContainer)
			continue
		}
		ovs, dbg := podTarget(h.Name, h.Pod, h.Container), podTarget(h.Name, h.HostToolsPod, h.HostToolsContainer)
		if !strings.Contains(a.log, h.Name+": the OVS container lacks tcpdump") {
			bad("harness.log does not say %q", h.Name+": the OVS container lacks tcpdump")
		}
		if want := h.Name + ": tcpdump run in " + dbg; !strings.Contains(a.log, want) {
			bad("harness.log does not say %q", want)
		}
		probed, captured := false, 0
		for _, e := range a.cmds {
			switch {
			case e.Target == ovs && e.Cmd == offload.ToolsProbeCommand:
				probed = probed || strings.Contains(e.Stdout, "asap2e2e-probe tcpdump 127 ")
			case e.Target == dbg && strings.Contains(e.Cmd, "tcpdump -nn") && captureEnded(e):
				captured++
			}
		}
		if !probed {
			bad("commands.jsonl: no tools probe in %s found tcpdump missing (exit 127)", ovs)
		}
		if captured == 0 {
			bad("commands.jsonl: no capture (tcpdump -nn) ran to its end in %s (exit 0 or timeout's 124, with tcpdump's summary)", dbg)
		}
		if probed && captured > 0 {
			lines = append(lines, fmt.Sprintf("hypervisor %s: tcpdump not found in %s (probe exit 127); %d capture(s) ran in %s", h.Name, ovs, captured, dbg))
		}
	}
	return lines, problems, nil
}

// nodeMapping returns every way in which the run's hypervisors are not
// Nova's FQDNs under domain mapped to the Kubernetes nodes named as their
// service hosts (the FQDN's first label): per hypervisor of results.json,
// its name ends in "."+domain, its guests name it, and harness.log says its
// commands ran in its pod on node <short name>, matched by service host.
func nodeMapping(runDir, domain string) (lines, problems []string, err error) {
	a, err := loadRun(runDir)
	if err != nil {
		return nil, nil, err
	}
	domain = strings.Trim(domain, ".")
	if domain == "" {
		return nil, nil, fmt.Errorf("node-mapping: empty domain")
	}
	hvs := a.res.Environment.Hypervisors
	if len(hvs) == 0 {
		problems = append(problems, runDir+": no hypervisor recorded in results.json")
	}
	for _, h := range hvs {
		short, ok := strings.CutSuffix(h.Name, "."+domain)
		if !ok || short == "" || strings.Contains(short, ".") {
			problems = append(problems, fmt.Sprintf("hypervisor %q: not a host name in domain %s (Nova's hypervisor_hostname should be <host>.%s)", h.Name, domain, domain))
			continue
		}
		if h.Transport != "kubernetes" || h.Pod == "" {
			problems = append(problems, fmt.Sprintf("hypervisor %s: transport %q, pod %q: not reached over Kubernetes", h.Name, h.Transport, h.Pod))
			continue
		}
		want := fmt.Sprintf("%s: commands run in pod %s, container %s on node %s (matched by service host)", h.Name, h.Pod, h.Container, short)
		if !strings.Contains(a.log, want) {
			problems = append(problems, fmt.Sprintf("hypervisor %s: harness.log does not say %q", h.Name, want))
			continue
		}
		lines = append(lines, fmt.Sprintf("hypervisor %s → node %s (service host), pod %s", h.Name, short, h.Pod))
	}
	for _, g := range a.res.Environment.Guests {
		if g.Hypervisor != "" && !strings.HasSuffix(g.Hypervisor, "."+domain) {
			problems = append(problems, fmt.Sprintf("guest %s: hypervisor %q is not in domain %s", g.Name, g.Hypervisor, domain))
		}
	}
	return lines, problems, nil
}

// captureEnded is a capture that ended as the representor check's captures
// end (e2e/offload's representor.go): exit 0 when tcpdump reached its
// packet count, 124 when timeout ended the window with SIGINT (at a rate
// below count/window: a loaded machine, a slower flow) — either way with
// tcpdump's own summary on stderr, and no error of the transport.
func captureEnded(e remote.LogEntry) bool {
	return (e.ExitCode == 0 || e.ExitCode == 124) && e.Error == "" && strings.Contains(e.Stderr, "packets captured")
}
