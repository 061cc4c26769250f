package harness

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// hostTools is where a hypervisor's host tools (offload.HostTools) ran with
// hypervisors.access: kubernetes.
type hostTools struct {
	inOVS []string // found in the OVS container by the probe
	debug *kubeaccess.Pod
}

// debugPods is how the harness reaches the node debug pods; the run's
// kubeaccess.Cluster, a fake in the tests.
type debugPods interface {
	CreateDebugPod(ctx context.Context, in kubeaccess.DebugPodInput) (kubeaccess.Pod, error)
}

// kubeHostTools decides where hypervisor hv's host tools run. It probes the
// OVS container once (offload.ProbeTools); the tools found there run
// there. For the others it creates the node's debug pod
// (hypervisors.kubernetes.debug_image; its delete registered with the run's
// cleaner), checks that the pod has them, and routes them to it
// (offload.WithHostTools). No debug_image with a required tool missing is
// an error naming the node, the tools and the key; an optional one
// (offload.OptionalTools: ethtool) missing alone needs no debug pod, and
// the NIC facts are then recorded as offload.NoEthtool.
func (pair *Pair) kubeHostTools(ctx context.Context, hv string, ovs remote.Runner, node string, pods debugPods, newRunner func(kubeaccess.Pod) (remote.Runner, error)) (remote.Runner, hostTools, error) {
	var ht hostTools
	probe, err := offload.ProbeTools(ctx, pair.run.bounded(ovs))
	if err != nil {
		return nil, ht, fmt.Errorf("hypervisor %s: %w", hv, err)
	}
	ht.inOVS = probe.Found
	missing, required := probe.Missing(), probe.MissingRequired()
	pair.Logf("%s: host tools in the OVS container: %s", hv, listOrNone(probe.Found))
	if len(missing) > 0 {
		pair.Logf("%s: the OVS container lacks %s", hv, probe.Why(missing))
	}
	if len(required) == 0 {
		noteOptional(pair.Logf, hv, missing)
		return ovs, ht, nil
	}
	k := pair.run.Config.Hypervisors.Kubernetes
	if k.DebugImage == "" {
		return nil, ht, fmt.Errorf("%s: hypervisor %s (node %s): the OVS container %s lacks %s; %s",
			pair.run.Config.File, hv, node, ovs.Name(), probe.Why(required), kubeaccess.DebugImageAdvice)
	}
	if pair.run.cleaner == nil {
		return nil, ht, fmt.Errorf("hypervisor %s: a node debug pod is needed but the run has no cleaner to delete it (provisioning sets it)", hv)
	}
	pod, err := pods.CreateDebugPod(ctx, kubeaccess.DebugPodInput{
		Name:     fixtures.ResourceName(pair.run.Config.Run.NamePrefix, pair.run.RunID, "debug-"+node),
		Prefix:   pair.run.Config.Run.NamePrefix,
		RunID:    pair.run.RunID,
		Node:     node,
		Image:    k.DebugImage,
		Interval: pair.run.Config.Interval(config.IntervalDebugPod),
		// A pod whose delete never comes stops when the run would have
		// timed out (make e2e's Ginkgo --timeout is this budget).
		ActiveDeadline: plan.RunBudget(pair.run.Config).Total,
		Cleaner:        pair.run.cleaner,
		Logf:           pair.Logf,
	})
	if err != nil {
		return nil, ht, fmt.Errorf("hypervisor %s: %s lacks %s: %w", hv, ovs.Name(), strings.Join(required, ", "), err)
	}
	ht.debug = &pod
	dr, err := newRunner(pod)
	if err != nil {
		return nil, ht, fmt.Errorf("hypervisor %s: %w", hv, err)
	}
	dprobe, err := offload.ProbeTools(ctx, pair.run.bounded(dr))
	if err != nil {
		return nil, ht, fmt.Errorf("hypervisor %s: %w", hv, err)
	}
	var lacking, routed, absent []string
	for _, t := range missing {
		switch {
		case contains(dprobe.Found, t):
			routed = append(routed, t)
		case contains(required, t):
			lacking = append(lacking, t)
		default:
			absent = append(absent, t)
		}
	}
	if len(lacking) > 0 {
		return nil, ht, fmt.Errorf("%s: hypervisor %s (node %s): neither the OVS container nor the debug pod (hypervisors.kubernetes.debug_image %s) has %s",
			pair.run.Config.File, hv, node, k.DebugImage, dprobe.Why(lacking))
	}
	noteOptional(pair.Logf, hv, absent)
	pair.Logf("%s: %s run in %s", hv, strings.Join(routed, ", "), dr.Name())
	return offload.WithHostTools(ovs, dr, routed), ht, nil
}

// noteOptional says with logf what the optional tools missing on hv
// cost: the NIC facts (offload.OptionalTools).
func noteOptional(logf func(string, ...any), hv string, missing []string) {
	if len(missing) > 0 {
		logf("%s: no %s where its host tools run: the run goes on, the NIC facts are recorded as %q", hv, strings.Join(missing, ", "), offload.NoEthtool)
	}
}

// preflighter is how the harness checks the cluster before anything is
// built; the cluster Options.Kubernetes opens in a run, a fake in the tests.
type preflighter interface {
	Preflight(ctx context.Context, in kubeaccess.PreflightInput) kubeaccess.PreflightReport
}

// PreflightKube checks, before anything is built, what the run will need
// from the Kubernetes cluster (kubeaccess.Cluster's Preflight): credentials and every
// permission, the OVS pods, the node of each hypervisor known now
// (placement.hosts, node_names' keys) and, with a debug image, admission of
// the debug pod (dry run). Each check goes to harness.log; every problem
// is in the error. The time is the wall-time breakdown's preflight. c nil:
// the cluster of hypervisors.kubernetes, opened with Options.Kubernetes.
func (run *Run) PreflightKube(ctx context.Context, c preflighter) error {
	if run.Config.Hypervisors.Access != config.HypervisorAccessKubernetes {
		return nil
	}
	stop := run.Timings.Track(results.PhasePreflight)
	defer stop()
	k := run.Config.Hypervisors.Kubernetes
	if c == nil {
		kc, err := run.openCluster(kubeaccess.Options{API: run.Config.Interval(config.IntervalKubeAPI), Logf: run.Logf})
		if err != nil {
			return err
		}
		defer closeCluster(kc, run.Logf)
		c = kc
	}
	in := kubeaccess.PreflightInput{Hypervisors: kubeaccess.ConfiguredTargets(run.Config), RunBudget: plan.RunBudget(run.Config).Total}
	if k.DebugImage != "" {
		in.DebugPod = &kubeaccess.DebugPodInput{
			Name:   fixtures.ResourceName(run.Config.Run.NamePrefix, run.RunID, "debug-preflight"),
			Prefix: run.Config.Run.NamePrefix, RunID: run.RunID, Image: k.DebugImage, ActiveDeadline: plan.RunBudget(run.Config).Total,
		}
	}
	r := c.Preflight(ctx, in)
	run.ovsPods = r.Pods
	for _, w := range r.Warnings {
		run.Logf("WARNING: kubernetes preflight: %s", w)
	}
	for _, ch := range r.Checks {
		if ch.Problem == "" {
			run.Logf("kubernetes preflight: ok: %s", ch.What)
		} else {
			run.Logf("kubernetes preflight: FAILED: %s", ch.Problem)
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%s: %w (nothing was created; go run ./tools/kubecheck %s checks again)", run.Config.File, err, run.Config.File)
	}
	return nil
}

// openCluster opens the cluster of hypervisors.kubernetes with
// Options.Kubernetes. A program that passed none (one that links no
// Kubernetes client) cannot run with hypervisors.access: kubernetes: the
// error says so before anything is built.
func (run *Run) openCluster(o kubeaccess.Options) (kubeaccess.Cluster, error) {
	if run.openKube == nil {
		return nil, fmt.Errorf("%s: hypervisors.access: kubernetes, but this program has no Kubernetes client (harness.Options.Kubernetes is nil; the suites pass kube.Open)", run.Config.File)
	}
	c, err := run.openKube(run.Config.Hypervisors.Kubernetes, o)
	if err != nil {
		return nil, fmt.Errorf("%s: hypervisors.kubernetes: %w", run.Config.File, err)
	}
	return c, nil
}

// closeCluster closes c when it holds anything to close (kube.Cluster: the
// run's private copy of the kubeconfig); a failure is said, never fatal.
func closeCluster(c any, logf func(format string, args ...any)) {
	cl, ok := c.(io.Closer)
	if !ok {
		return
	}
	if err := cl.Close(); err != nil {
		logf("WARNING: kubernetes: closing the cluster: %v", err)
	}
}

// leakedDebugPods lists this run's debug pods that still exist (the leak
// check's share of Kubernetes): nil without a cluster or a debug image.
func (run *Run) leakedDebugPods(ctx context.Context) ([]fixtures.SweptResource, error) {
	if run.kube == nil || run.Config.Hypervisors.Kubernetes.DebugImage == "" {
		return nil, nil
	}
	pods, err := run.kube.SweepDebugPods(ctx, kubeaccess.SweepInput{Prefix: run.Config.Run.NamePrefix, RunID: run.RunID,
		Interval: run.Config.Interval(config.IntervalDebugPod), Logf: run.Logf})
	if err != nil {
		return nil, err
	}
	return sweptPods(pods), nil
}

// sweptPods are the swept debug pods as rows of a fixtures.SweepReport.
func sweptPods(pods []kubeaccess.SweptPod) []fixtures.SweptResource {
	out := make([]fixtures.SweptResource, 0, len(pods))
	for _, p := range pods {
		out = append(out, fixtures.SweptResource(p))
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
