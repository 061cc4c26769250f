// Package kubeaccess is what a run asks of the Kubernetes cluster with
// hypervisors.access: kubernetes, in plain Go: the hypervisors to reach
// (Target), where their commands run (Pod), the node debug pod, the
// preflight and the debug pod sweep, and the Cluster interface that
// e2e/remote/kube implements with client-go.
//
// It imports no client-go, so that the harness, which speaks only this
// package, and every test binary that builds the harness link none of the
// Kubernetes libraries (some 300 packages); the programs that really reach
// a cluster (the suites, tools/kubecheck, tools/sweeper) pass kube.Open in.
//
// Its words: Target, Pod, NodeMatch, DebugPodInput, PreflightInput and
// PreflightReport (ConfiguredTargets), SweepInput and SweptPod; PreflightTools
// (tools.go: the host tools probed in one OVS pod per distinct image through
// an injected ToolsProbeFunc, e2e/offload's, which this package does not
// import; a required tool missing without a debug image is refused naming
// node, pod, image and the nodes that share it; used by the harness's
// preflight and tools/kubecheck); Options (Logf, the run's log, and Replaced,
// told of every move of a runner to the replacement of its vanished OVS pod:
// PodReplacement); PodGoneError (a command whose pod vanished: the pod, its
// node, how, the API server, the replacement or why none); the Cluster
// interface (Preflight, Runner, RunnerIn, CreateDebugPod, SweepDebugPods) with
// Open, the constructor the harness is handed.
package kubeaccess

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Cluster is one Kubernetes API and where the OVS pods are in it
// (*kube.Cluster).
type Cluster interface {
	// Preflight checks what a run will need from the cluster and reports
	// every problem at once.
	Preflight(ctx context.Context, in PreflightInput) PreflightReport
	// Runner maps hypervisor t to its node, finds the node's OVS pod and
	// returns its runner, and how the node was matched.
	Runner(ctx context.Context, t Target) (PodRunner, NodeMatch, error)
	// RunnerIn is hypervisor hv's runner in pod (e.g. a debug pod).
	RunnerIn(hv string, pod Pod) (PodRunner, error)
	// CreateDebugPod creates in's pod, registers its delete with
	// in.Cleaner once the API accepted it, and waits until it runs.
	CreateDebugPod(ctx context.Context, in DebugPodInput) (Pod, error)
	// SweepDebugPods lists (and with in.Delete deletes) the debug pods in
	// selects.
	SweepDebugPods(ctx context.Context, in SweepInput) ([]SweptPod, error)
}

// Versioned is a Cluster that says its API server's version (kube.Cluster:
// discovery's ServerVersion, "v1.29.4"); the run records it once. A fake
// Cluster need not be one.
type Versioned interface {
	ServerVersion(ctx context.Context) (string, error)
}

// Open connects to the cluster of k: kube.Open in the programs that reach
// one, a fake in tests.
type Open func(k config.Kubernetes, o Options) (Cluster, error)

// Options are what opening a cluster needs besides the config block.
type Options struct {
	Log       *remote.CommandLog // every command; nil = none
	KillGrace time.Duration      // TERM → KILL; 0 = remote.DefaultKillGrace
	// API bounds each API call (intervals.kube_api); zero = its default.
	API config.Interval
	// Logf, when set, is the run's log: a runner that moves to the
	// replacement of a vanished OVS pod says so there, and client-go's own
	// log (klog, its "Unhandled Error" reports among them) goes there
	// instead of the process's stderr. nil = neither.
	Logf func(format string, args ...any)
	// Replaced, when set, is told of every move of a runner
	// (Cluster.Runner's) to the replacement of its vanished OVS pod: once
	// per move, in the order of a runner's moves, before the command whose
	// exec found the pod gone returns its PodGoneError. It must not call
	// back into the runner. nil = nobody is told (the log still is).
	Replaced func(PodReplacement)
}

// PodReplacement is a runner's move from the OVS pod that vanished under a
// command (PodGoneError) to the pod the DaemonSet put in its place, where
// the later commands of the hypervisor run.
type PodReplacement struct {
	Hypervisor string
	Old, New   Pod
	How        string    // PodGoneError.How: "NotFound", "being deleted", …
	At         time.Time // when the runner moved
}

// PodRunner runs commands in one pod's container.
type PodRunner interface {
	remote.Runner
	// Pod is where the commands run.
	Pod() Pod
}

// Pod is where a hypervisor's commands run.
type Pod struct {
	Node, Namespace, Name, Container string
	// Image is the container's image (the pod's spec), as found.
	Image string
	// UID is the pod's metadata.uid as found ("" when not known): a pod
	// deleted and created again under the same name has another.
	UID string
	// HostRoot, when set, is where the host's / is mounted in the
	// container: every command runs under `chroot HostRoot`, so it runs
	// the host's own programs (a debug pod of debug_image: auto).
	HostRoot string
}

func (p Pod) String() string {
	return fmt.Sprintf("pod %s/%s, container %s", p.Namespace, p.Name, p.Container)
}

// Target is one hypervisor as Nova names it: its hypervisor name
// (OS-EXT-SRV-ATTR:hypervisor_hostname, from libvirt, which can carry a
// domain) and, when known, its compute service's host
// (OS-EXT-SRV-ATTR:host). On MOSK the service host is the Kubernetes node's
// name: Rockoon looks a node's compute services up with host=<node name>
// and keeps Nova from using FQDN hosts.
type Target struct {
	Hypervisor  string
	ServiceHost string
}

func (t Target) String() string {
	if t.ServiceHost == "" || t.ServiceHost == t.Hypervisor {
		return "hypervisor " + t.Hypervisor
	}
	return fmt.Sprintf("hypervisor %s (service host %s)", t.Hypervisor, t.ServiceHost)
}

// NodeMatch is how a hypervisor was mapped to a node.
type NodeMatch struct {
	Node string
	// How: "hypervisors.kubernetes.node_names", "service host",
	// "hypervisor name", "short hypervisor name" or "kubernetes.io/hostname
	// label".
	How string
}

// Cleaner registers a teardown step, run last in, first out (the shape of
// fixtures.Cleaner, which the harness passes).
type Cleaner interface {
	Defer(what string, fn func(ctx context.Context) error)
}

// DebugPodInput is one node debug pod: host network, privileged, pinned to
// Node, running Image; the host tools the OVS container lacks run in it.
type DebugPodInput struct {
	Name   string // <prefix>-<runid>-debug-<node> (fixtures.ResourceName)
	Prefix string // run.name_prefix, also a label
	RunID  string
	Node   string
	// Image is hypervisors.kubernetes.debug_image; config.DebugImageAuto
	// is resolved by CreateDebugPod (and the preflight's dry run) to the
	// image of Node's OVS pod, with HostRoot set.
	Image string
	// HostRoot, when set, mounts the host's / there, read-only, and the
	// commands run under chroot into it (Pod.HostRoot).
	HostRoot string
	// Interval (intervals.debug_pod) bounds the wait for Running and the
	// wait for the pod to be gone after its delete.
	Interval wait.Interval
	// ActiveDeadline bounds the pod's life (activeDeadlineSeconds): a pod
	// whose delete never came (a second Ctrl-C, a killed run) is stopped by
	// the kubelet when it has passed; the harness gives the run's budget.
	// 0 = none.
	ActiveDeadline time.Duration
	// Cleaner gets the pod's delete the moment the API accepted the create.
	Cleaner Cleaner
	Logf    func(format string, args ...any)
}

// PreflightInput is what a run will need from the cluster.
type PreflightInput struct {
	// Hypervisors are those known before anything is built: placement.hosts,
	// node_names' keys, the names given to tools/kubecheck.
	Hypervisors []Target
	// DebugPod, when set, is created with DryRun All on a node that runs an
	// OVS pod, so that admission (PodSecurity, MKE) refuses it now; its
	// Node is filled in here, its Name must be a valid pod name.
	DebugPod *DebugPodInput
	// RunBudget is the longest the run may take (plan.RunBudget's total):
	// a bearer token that expires before it is over is a warning. 0 = no
	// such check.
	RunBudget time.Duration
}

// ConfiguredTargets are the hypervisors a config names before anything is
// built: placement.hosts, then node_names' keys, each once.
func ConfiguredTargets(cfg *config.Config) []Target {
	var out []Target
	seen := map[string]bool{}
	names := append([]string(nil), cfg.Placement.Hosts...)
	names = append(names, slices.Sorted(maps.Keys(cfg.Hypervisors.Kubernetes.NodeNames))...)
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, Target{Hypervisor: n})
		}
	}
	return out
}

// Check is one preflight step: what was checked and the problem, if any.
type Check struct {
	What    string
	Problem string // "" = passed
}

// PreflightReport lists every step, passed or not.
type PreflightReport struct {
	Source string // where the credentials came from
	Checks []Check
	// Pods are the Running OVS pods found, one per node, by node: where
	// the tools probe runs (PreflightTools, one per distinct image).
	Pods []Pod
	// Warnings do not refuse the run: a bearer token that expires before
	// the run's budget is over.
	Warnings []string
}

// Err is every problem, one per line, nil when none.
func (r PreflightReport) Err() error {
	var probs []string
	for _, c := range r.Checks {
		if c.Problem != "" {
			probs = append(probs, c.Problem)
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("kubernetes preflight (%s): %d problem(s):\n  %s", r.Source, len(probs), strings.Join(probs, "\n  "))
}

// SweepInput selects leftover debug pods of harness runs, by their labels:
// exactly one of RunID, OlderThan and All, and only pods whose name starts
// with "<Prefix>-" and that carry the prefix label.
type SweepInput struct {
	Prefix    string
	RunID     string
	OlderThan time.Duration
	All       bool
	// Delete deletes what is selected; false is a dry run.
	Delete   bool
	Interval wait.Interval // each delete's wait (intervals.debug_pod)
	Now      func() time.Time
	Logf     func(format string, args ...any)
}

// SweptPod is one debug pod the sweep looked at. Its fields are those of
// fixtures.SweptResource, in the same order, so that a sweep report takes
// it by conversion (fixtures.SweptResource(p)) without this package
// importing fixtures.
type SweptPod struct {
	Kind      string     `json:"kind"` // kube.KindDebugPod
	ID        string     `json:"id"`   // <namespace>/<name>
	Name      string     `json:"name"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	Tags      []string   `json:"tags,omitempty"` // asap2-e2e/run-id=<id>
	// Action: "would delete" (dry run), "deleted" or "failed".
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"` // "node <node>"
	Error  string `json:"error,omitempty"`
}

// PodGoneError is a command that failed because its pod vanished: deleted
// (the API server answers NotFound), being deleted, or deleted and created
// again under the same name (another UID), as a DaemonSet rollout or a
// node drain does to the OVS pod. The command is not run again: what it
// would have observed straddles an ovs-vswitchd restart.
type PodGoneError struct {
	Hypervisor string
	Old        Pod
	How        string // "NotFound", "being deleted", "created again (uid A → B)"
	Server     string // the API server's URL
	// New is the pod that runs on Old.Node now with the same label
	// selector (nil when none was found): later commands run there.
	New *Pod
	// NoNew says why there is no New (the lookup's error).
	NoNew error
	Err   error // the exec's own error
}

func (e *PodGoneError) Error() string {
	s := fmt.Sprintf("kubernetes: pod %s/%s on node %s vanished (%s at the API server %s) under this command, which is not run again",
		e.Old.Namespace, e.Old.Name, e.Old.Node, e.How, e.Server)
	switch {
	case e.New != nil:
		s += fmt.Sprintf("; it was replaced by pod %s/%s (uid %s), where the later commands of hypervisor %s run", e.New.Namespace, e.New.Name, e.New.UID, e.Hypervisor)
	case e.NoNew != nil:
		s += fmt.Sprintf("; no replacement runs there yet (%v)", e.NoNew)
	}
	return s + fmt.Sprintf(" (exec: %v)", e.Err)
}

func (e *PodGoneError) Unwrap() error { return e.Err }
