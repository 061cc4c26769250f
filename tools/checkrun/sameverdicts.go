package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// sameVerdicts compares a run whose hypervisors were reached over SSH with
// one over Kubernetes on the same cloud (make lab's LAB_K8S=1 phase): every
// hypervisor of the second ran its commands in a pod (transport, pod and
// container recorded), the first's over SSH; every offload check of the
// second left the same verdicts as the first's for the same flow (as many,
// one per hypervisor), and every profile of the second is in the first with
// the same path and check verdicts. It returns what it compared (lines) and
// every difference (problems).
func sameVerdicts(sshDir, kubeDir string) (lines, problems []string, err error) {
	ssh, err := results.Load(filepath.Join(sshDir, "results.json"))
	if err != nil {
		return nil, nil, err
	}
	kube, err := results.Load(filepath.Join(kubeDir, "results.json"))
	if err != nil {
		return nil, nil, err
	}
	lines = append(lines, fmt.Sprintf("run %s (%s) over kubernetes, run %s (%s) over ssh", kube.RunID, kubeDir, ssh.RunID, sshDir))
	for _, h := range ssh.Environment.Hypervisors {
		if h.Transport != "" && h.Transport != "ssh" {
			problems = append(problems, fmt.Sprintf("%s: hypervisor %s: transport %q, want ssh", sshDir, h.Name, h.Transport))
		}
	}
	var sshNames, kubeNames []string
	for _, h := range ssh.Environment.Hypervisors {
		sshNames = append(sshNames, h.Name)
	}
	for _, h := range kube.Environment.Hypervisors {
		kubeNames = append(kubeNames, h.Name)
		if h.Transport != "kubernetes" || h.Pod == "" || h.Container == "" {
			problems = append(problems, fmt.Sprintf("%s: hypervisor %s: transport %q, pod %q, container %q; want kubernetes with a pod and a container", kubeDir, h.Name, h.Transport, h.Pod, h.Container))
			continue
		}
		lines = append(lines, fmt.Sprintf("hypervisor %s: over kubernetes, pod %s, container %s", h.Name, h.Pod, h.Container))
	}
	slices.Sort(sshNames)
	slices.Sort(kubeNames)
	if len(kubeNames) == 0 {
		problems = append(problems, kubeDir+": no hypervisor recorded")
	}
	// The verdicts are compared per check and flow: a lab of more than
	// two computes may place the pair on other hosts, which is no
	// difference of the transport.
	if !slices.Equal(sshNames, kubeNames) {
		lines = append(lines, fmt.Sprintf("note: the pair ran on %v over ssh, on %v over kubernetes", sshNames, kubeNames))
	}
	if len(kube.Offload) == 0 {
		problems = append(problems, kubeDir+": no offload verdict: the checks did not run over kubernetes")
	}
	l, p := compareChecks("offload", ssh.Offload, kube.Offload, true)
	lines, problems = append(lines, l...), append(problems, p...)
	sshProfiles := map[string]results.ProfileResult{}
	for _, pr := range ssh.Profiles {
		sshProfiles[pr.Name] = pr
	}
	for _, pr := range kube.Profiles {
		base, ok := sshProfiles[pr.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("profile %q ran over kubernetes but not in %s", pr.Name, sshDir))
			continue
		}
		if pr.Path != base.Path {
			problems = append(problems, fmt.Sprintf("profile %q: path %s over kubernetes, %s over ssh", pr.Name, pr.Path, base.Path))
		} else {
			lines = append(lines, fmt.Sprintf("profile %q: path %s in both", pr.Name, pr.Path))
		}
		l, p := compareChecks("profile "+pr.Name, base.Offload, pr.Offload, false)
		lines, problems = append(lines, l...), append(problems, p...)
	}
	return lines, problems, nil
}

// compareChecks holds the kubernetes run's verdicts to the ssh run's, per
// check and flow; with all, a check and flow of the ssh run the kubernetes
// run lacks is a difference too.
func compareChecks(what string, ssh, kube []results.CheckResult, all bool) (lines, problems []string) {
	group := func(cs []results.CheckResult) (map[string][]string, []string) {
		m := map[string][]string{}
		var keys []string
		for _, c := range cs {
			k := c.Name
			if c.Flow != "" {
				k += " (" + c.Flow + " flow)"
			}
			if _, ok := m[k]; !ok {
				keys = append(keys, k)
			}
			m[k] = append(m[k], string(c.Verdict))
		}
		for _, v := range m {
			slices.Sort(v)
		}
		slices.Sort(keys)
		return m, keys
	}
	s, _ := group(ssh)
	k, keys := group(kube)
	for _, key := range keys {
		want, ok := s[key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: check %s ran over kubernetes only", what, key))
		case !slices.Equal(want, k[key]):
			problems = append(problems, fmt.Sprintf("%s: check %s says [%s] over kubernetes, [%s] over ssh", what, key, strings.Join(k[key], " "), strings.Join(want, " ")))
		default:
			lines = append(lines, fmt.Sprintf("%s: check %s: [%s] in both", what, key, strings.Join(want, " ")))
		}
	}
	if all {
		var missing []string
		for key := range s {
			if _, ok := k[key]; !ok {
				missing = append(missing, key)
			}
		}
		slices.Sort(missing)
		for _, key := range missing {
			problems = append(problems, fmt.Sprintf("%s: check %s ran over ssh but left no verdict over kubernetes", what, key))
		}
	}
	return lines, problems
}
