// Command checkrun asserts what a finished run proved, from its artifacts
// alone (results JSON and JUnit), so a pipeline can gate on it.
//
//	checkrun refused RUN_DIR JUNIT   the run expected asap2 and the harness refused
//	                                 it: the offload spec failed, every verdict in
//	                                 the results says software, and the JUnit
//	                                 failure message quotes the checks' reasons;
//	                                 with port security on, the conntrack check
//	                                 judged every flow on every hypervisor too
//	checkrun nova-filled RUN_DIR     the run left the data ports' binding:profile to
//	                                 Nova, and every data port, as saved before
//	                                 teardown, holds capabilities [switchdev]
//	checkrun same-verdicts SSH_RUN_DIR KUBE_RUN_DIR
//	                                 the second run reached its hypervisors over
//	                                 Kubernetes (pod and container recorded), the
//	                                 first over SSH, and every check verdict and
//	                                 profile path of the second equals the first's
//	checkrun debug-pod KUBE_RUN_DIR  over Kubernetes, each hypervisor's OVS container
//	                                 lacked tcpdump (its probe: exit 127) and the
//	                                 captures ran in a node debug pod, which
//	                                 results.json names (host_tools_pod) and
//	                                 harness.log says
//	checkrun node-mapping KUBE_RUN_DIR DOMAIN
//	                                 each hypervisor is an FQDN in DOMAIN (Nova's
//	                                 hypervisor_hostname) and its commands ran in
//	                                 the pod of the node named as its short name,
//	                                 matched by Nova's service host
//
// It exits 0 when the assertion holds, 1 when it does not (each reason is
// printed), 2 on bad usage or unreadable input.
package main

import (
	"encoding/xml"
	"fmt"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = "usage: checkrun refused RUN_DIR JUNIT_XML\n       checkrun nova-filled RUN_DIR\n       checkrun same-verdicts SSH_RUN_DIR KUBE_RUN_DIR\n       checkrun debug-pod KUBE_RUN_DIR\n       checkrun node-mapping KUBE_RUN_DIR DOMAIN\n"

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && cli.IsHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) == 3 && args[0] == "same-verdicts" {
		lines, problems, err := sameVerdicts(args[1], args[2])
		return verdict(stdout, stderr, lines, problems, err, "DIFFERENT",
			"ok: the run over kubernetes reached the verdicts of the run over ssh")
	}
	if len(args) == 2 && args[0] == "debug-pod" {
		lines, problems, err := debugPod(args[1])
		return verdict(stdout, stderr, lines, problems, err, "NO DEBUG POD",
			fmt.Sprintf("ok: run %s ran tcpdump in a node debug pod, the OVS containers lacking it", filepath.Base(args[1])))
	}
	if len(args) == 3 && args[0] == "node-mapping" {
		lines, problems, err := nodeMapping(args[1], args[2])
		return verdict(stdout, stderr, lines, problems, err, "NOT MAPPED BY SERVICE HOST",
			fmt.Sprintf("ok: run %s: every hypervisor is an FQDN in %s, mapped to the node of its service host", filepath.Base(args[1]), args[2]))
	}
	if len(args) == 2 && args[0] == "nova-filled" {
		lines, problems, err := novaFilled(args[1])
		return verdict(stdout, stderr, lines, problems, err, "NOT FILLED BY NOVA",
			fmt.Sprintf("ok: run %s left binding:profile to Nova, and Nova wrote capabilities [switchdev] on every data port", filepath.Base(args[1])))
	}
	if len(args) != 3 || args[0] != "refused" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	problems, err := refused(args[1], args[2])
	return verdict(stdout, stderr, nil, problems, err, "NOT REFUSED AS EXPECTED",
		fmt.Sprintf("ok: run %s expected asap2 and was refused with the checks' reasons", filepath.Base(args[1])))
}

// verdict prints an assertion's lines and each problem after its label, and
// gives the exit status: 2 when the input could not be read, 1 with any
// problem, 0 (after okLine) otherwise.
func verdict(stdout, stderr io.Writer, lines, problems []string, err error, label, okLine string) int {
	if err != nil {
		fmt.Fprintf(stderr, "checkrun: %v\n", err)
		return 2
	}
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	for _, p := range problems {
		fmt.Fprintf(stdout, "%s: %s\n", label, p)
	}
	if len(problems) > 0 {
		return 1
	}
	fmt.Fprintln(stdout, okLine)
	return 0
}

type junitSuites struct {
	Suites []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// refused returns every way in which the run was not refused for the right
// reasons.
func refused(runDir, junitPath string) ([]string, error) {
	res, err := results.Load(filepath.Join(runDir, "results.json"))
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(junitPath)
	if err != nil {
		return nil, err
	}
	var ju junitSuites
	if err := xml.Unmarshal(data, &ju); err != nil {
		return nil, fmt.Errorf("%s: %w", junitPath, err)
	}
	var problems []string
	if res.Config.ExpectedPath != results.PathASAP2 {
		problems = append(problems, fmt.Sprintf("%s: expected_path is %q, not asap2", runDir, res.Config.ExpectedPath))
	}
	if len(res.Offload) == 0 {
		problems = append(problems, "the results hold no offload verdict: the checks never ran")
	}
	ran := map[string]bool{}
	for _, c := range res.Offload {
		ran[c.Name] = true
	}
	for _, name := range res.Config.Checks {
		if !ran[name] {
			problems = append(problems, fmt.Sprintf("check %s was configured but left no verdict: the refusal does not rest on it", name))
		}
	}
	// With port security on, every flow the checks judged (the evidence
	// flows, tcp and udp: the flood ping is no flow of theirs) went through
	// conntrack: the refusal rests on the conntrack check too, one verdict
	// per flow and hypervisor, as many as dpctl's.
	if res.Config.PortSecurity != nil && *res.Config.PortSecurity {
		perFlow, ctPerFlow := map[string]int{}, map[string]int{}
		var flows []string
		for _, c := range res.Offload {
			if c.Flow == "" {
				continue
			}
			if c.Name == results.CheckConntrack {
				ctPerFlow[c.Flow]++
				continue
			}
			if c.Name == results.CheckDpctl {
				if perFlow[c.Flow] == 0 {
					flows = append(flows, c.Flow)
				}
				perFlow[c.Flow]++
			}
		}
		for _, f := range flows {
			if ctPerFlow[f] < perFlow[f] {
				problems = append(problems, fmt.Sprintf("the run had port security on, but the conntrack check left %d verdict(s) for the %s flow where dpctl left %d (one per hypervisor): the refusal does not rest on conntrack", ctPerFlow[f], f, perFlow[f]))
			}
		}
	}
	var reasons []string
	for _, c := range res.Offload {
		if c.Verdict != results.VerdictSoftware {
			problems = append(problems, fmt.Sprintf("check %s (%s flow) says %s, want software: %s", c.Name, c.Flow, c.Verdict, c.Reason))
		}
		if len(c.EvidenceFiles) == 0 {
			problems = append(problems, fmt.Sprintf("check %s (%s flow) saved no evidence file", c.Name, c.Flow))
		}
		reasons = append(reasons, c.Reason)
	}
	var failure string
	for _, s := range ju.Suites {
		for _, c := range s.Cases {
			if strings.Contains(c.Name, "offloaded to the NIC") && c.Failure != nil {
				failure = c.Failure.Message + "\n" + c.Failure.Text
			}
		}
	}
	switch {
	case failure == "":
		problems = append(problems, fmt.Sprintf("%s: the spec \"proves the traffic is offloaded to the NIC\" did not fail", junitPath))
	default:
		for _, r := range reasons {
			// The failure quotes each check's reason (ExpectPath lists them all).
			if _, after, ok := strings.Cut(r, ": "); ok && !strings.Contains(failure, after) {
				problems = append(problems, fmt.Sprintf("the JUnit failure does not quote the reason %q", after))
			}
		}
	}
	return problems, nil
}
