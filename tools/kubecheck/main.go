// Command kubecheck checks, before a run builds anything, that the
// Kubernetes cluster of a harness config with hypervisors.access:
// kubernetes can serve the run, and says what to fix — the same preflight
// harness.Start runs (kube.Preflight): the kubeconfig loads and its
// credentials are accepted; a SelfSubjectAccessReview for every verb the
// run needs; the OVS pods are listed with the selector and have the
// container; each hypervisor (placement.hosts, node_names' keys and the
// arguments) maps to a node with a Running OVS pod; with a debug_image, a
// server-side dry-run create of the debug pod passes admission; the host
// tools (tc, tcpdump, ip; ethtool optional) are probed in one OVS pod per
// distinct image (kubeaccess.PreflightTools, as harness.Start), a missing
// one refused without a debug_image. It creates nothing.
//
//	go run ./tools/kubecheck mosk.yaml
//	go run ./tools/kubecheck mosk.yaml kaas-node-5d6a….mosk.example.net=kaas-node-5d6a…
//
// A hypervisor argument is its Nova name (openstack hypervisor list),
// optionally with "=" and its compute service's host (openstack compute
// service list), which MOSK's node name is.
//
// One line per check on stdout ("ok" or "FAIL"). Exit code: 0 every check
// passed, 1 a check failed, 2 usage or config error.
//
// The tools probe is kubeaccess.PreflightTools with offload.ProbeTools. It
// imports config, offload, remote, remote/kube and remote/kubeaccess; the
// project's quotas need the cloud and are not checked here (harness.Start
// checks them).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kube"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
)

// preflighter is *kube.Cluster (tests replace newCluster).
type preflighter interface {
	Preflight(ctx context.Context, in kubeaccess.PreflightInput) kubeaccess.PreflightReport
	kubeaccess.PodRunners
}

var newCluster = func(k config.Kubernetes, o kubeaccess.Options) (preflighter, error) { return kube.NewCluster(k, o) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kubecheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: kubecheck CONFIG [HYPERVISOR[=SERVICE_HOST]...]")
		fmt.Fprintln(fs.Output(), "Checks the Kubernetes cluster of a harness config (hypervisors.access: kubernetes) as harness.Start does; creates nothing.")
		fs.PrintDefaults()
	}
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() < 1 {
		fmt.Fprintln(stderr, "kubecheck: want a harness config file")
		fs.Usage()
		return 2
	}
	cfg, err := config.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "kubecheck: %v\n", err)
		return 2
	}
	if cfg.Hypervisors.Access != config.HypervisorAccessKubernetes {
		fmt.Fprintf(stderr, "kubecheck: %s: hypervisors.access is %q: nothing runs over Kubernetes\n", cfg.File, cfg.Hypervisors.Access)
		return 2
	}
	in := kubeaccess.PreflightInput{Hypervisors: kubeaccess.ConfiguredTargets(cfg), RunBudget: plan.RunBudget(cfg).Total}
	for _, a := range fs.Args()[1:] {
		hv, host, _ := strings.Cut(a, "=")
		if hv == "" {
			fmt.Fprintf(stderr, "kubecheck: %q: want HYPERVISOR or HYPERVISOR=SERVICE_HOST\n", a)
			return 2
		}
		in.Hypervisors = append(in.Hypervisors, kubeaccess.Target{Hypervisor: hv, ServiceHost: host})
	}
	k := cfg.Hypervisors.Kubernetes
	if k.DebugImage != "" {
		in.DebugPod = &kubeaccess.DebugPodInput{Name: cfg.Run.NamePrefix + "-kubecheck-debug", Prefix: cfg.Run.NamePrefix, RunID: "kubecheck", Image: k.DebugImage}
	}
	c, err := newCluster(k, kubeaccess.Options{API: cfg.Interval(config.IntervalKubeAPI)})
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s: %v\n", cfg.File, err)
		return 1
	}
	if cl, ok := c.(io.Closer); ok {
		defer cl.Close() // the copy of the kubeconfig
	}
	r := c.Preflight(ctx, in)
	bound := cfg.Interval(config.IntervalCommand).Timeout
	probe := func(ctx context.Context, pr remote.Runner) (kubeaccess.ProbedTools, error) {
		return offload.ProbeTools(ctx, remote.Bounded(pr, bound, "intervals.command"))
	}
	r.Checks = append(r.Checks, kubeaccess.PreflightTools(ctx, c, r.Pods, k.DebugImage, probe)...)
	fmt.Fprintf(stdout, "credentials: %s\n", r.Source)
	failed := 0
	for _, ch := range r.Checks {
		if ch.Problem == "" {
			fmt.Fprintf(stdout, "ok   %s\n", ch.What)
			continue
		}
		failed++
		fmt.Fprintf(stdout, "FAIL %s\n", ch.Problem)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(stdout, "WARN %s\n", w)
	}
	if len(in.Hypervisors) == 0 {
		fmt.Fprintln(stdout, "note: no hypervisor named (placement.hosts, node_names or arguments): node mapping not checked")
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "kubecheck: %d of %d checks failed\n", failed, len(r.Checks))
		return 1
	}
	return 0
}
