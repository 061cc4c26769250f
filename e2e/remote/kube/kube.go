// Package kube runs hypervisor commands in the Open vSwitch pod of the
// hypervisor's Kubernetes node (MOSK runs ovs-vswitchd as a DaemonSet in the
// OpenStack namespace, host network, privileged), behind remote.Runner, so
// the offload checks, environment collection and the evidence window are the
// same over SSH and over Kubernetes.
//
// Credentials come from a kubeconfig through client-go's loading rules
// (clientcmd: $KUBECONFIG, then ~/.kube/config, or an explicit file and
// context) and its rest.Config, so exec credential plugins (kubelogin,
// cloud CLIs) and client certificates work as they do for kubectl. Nothing
// of them reaches the command log or an error message. The client is built
// from the run's private copy of the kubeconfig (kubeconfig.go), so that
// refreshed tokens never go into the user's file, which may be read-only.
//
// A node's pod is found as Rockoon's own diagnostics find it (osctl
// sosreport, collect_ovs_info): the pods of the namespace with the label
// selector and the field selector spec.nodeName=<node>; exactly one must be
// Running with the container ready.
//
// A command runs as `sh -c <wrapped command>` through pods/exec: WebSocket
// (v5.channel.k8s.io) first, SPDY when the server refuses the upgrade, as
// kubectl does since v1.30. pods/exec carries no signals, so the command is
// wrapped as over SSH (e2e/remote's wrap.go): it leads its own process group,
// reports the group's id, and a watchdog kills the group when its stdin
// ends. Stopping a command (Stop, cancellation, a bound) sends TERM to the
// group through a second exec, closes stdin (the watchdog's TERM, then KILL
// after the grace period), KILL through an exec if it still runs, and only
// then drops the stream; a dropped stream ends stdin too.
//
// The words it speaks (Target, Pod, the debug pod's and the preflight's
// inputs and reports) are e2e/remote/kubeaccess's, and *Cluster is its
// Cluster: the harness uses that package alone and is handed Open, so only
// the programs that pass Open link client-go.
//
// Where things are:
//
//   - kube.go: Cluster from the kubeconfig (client-go's loading rules); Open
//     is NewCluster, the kubeaccess.Cluster the harness is handed.
//   - version.go: ServerVersion, discovery's gitVersion
//     (kubeaccess.Versioned).
//   - nodes.go: Resolve, a hypervisor (kubeaccess.Target: the hypervisor name
//     and Nova's service host, fixtures.Server.Host) to its node, by
//     node_names, service host, hypervisor name, short name or the
//     kubernetes.io/hostname label (MatchNode, pure), and the node's pod from
//     one listing of the OVS pods; FindPod, the one Running OVS pod on a node
//     by label and spec.nodeName, its container ready.
//   - api.go: every API call bounded by intervals.kube_api, reads tried again
//     after a transient error.
//   - preflight.go: Preflight, before anything is built, every problem at
//     once: credentials, a SelfSubjectAccessReview per RequiredAccess, the OVS
//     pods and container (returned, one per node, for the tools probe), each
//     ConfiguredTargets hypervisor's node and pod, and the debug pod's
//     admission by a DryRun: All create, refused with AdmissionAdvice (MKE 3's
//     selective grant of privileged, hostNetwork and, with auto,
//     hostBindMounts to the user or service account, which has no namespace
//     exemption; MKE 4's api.ucpauthz exemptions; PodSecurity's namespace
//     label). The harness runs it in Start (harness.PreflightKube), and so
//     does tools/kubecheck.
//   - exec.go: Runner, the command wrapped by remote.Wrap and watched by
//     remote.Supervise, so Stop and cancellation kill its process group; the
//     same CommandLog as over SSH.
//   - gone.go: an exec that ends without an exit status is explained by one
//     read of the pod: vanished (NotFound, being deleted, another UID: a
//     kubeaccess.PodGoneError; the replacement is looked up by selector and
//     node, the OVS pod's runner moves to it, the run's log says so and
//     Options.Replaced is told, once per move and in order; the failed command
//     is not run again), the API server unreachable, or the stream's own
//     error; always naming the API server's URL, the pod and its node.
//     client-go's klog goes to Options.Logf.
//   - trailer.go: each command prints a marker with its status last on stderr
//     (removed from it), since a broken exec stream ends like exit 0 in
//     client-go: no marker is a dropped stream, or, with an exit status, a
//     shell killed from outside (its pod ended).
//   - debug.go: the node debug pod for the host tools the OVS container lacks,
//     in debug_namespace when set. DebugPodSpec: activeDeadlineSeconds is the
//     run's budget; debug_image: auto takes the image of the OVS pod on that
//     node (autoImage), mounts the host's / read-only at HostRootMount and
//     runs each command under chroot into it (podCommand; the wrapper stays in
//     the container). CreateDebugPod registers the delete with a Cleaner the
//     moment the create is accepted, waits for Running with wait.Poll over
//     intervals.debug_pod, stops at once on a pull no retry cures
//     (HopelessPull) and describes a pod that does not run by phase,
//     conditions, container state and events. DeletePod; SweepDebugPods by
//     label for the leak check and the sweeper, rows shaped as
//     fixtures.SweptResource.
//
// The tests use client-go's fake clientset and the CRI streaming server in
// process.
package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	// The legacy "auth-provider: oidc" of kubeconfigs, as MOSK's Keycloak
	// hands them out: kubectl has it compiled in, client-go only when
	// imported (else "no Auth Provider found for name \"oidc\"").
	_ "k8s.io/client-go/plugin/pkg/client/auth/oidc"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// Cluster is one Kubernetes API and where the OVS pods are in it.
type Cluster struct {
	rest      *rest.Config
	client    kubernetes.Interface
	namespace string
	selector  string
	container string
	nodeNames map[string]string
	source    string // Source()
	// copyDir holds the run's private copy of the kubeconfig, which the
	// client was built from ("" in-cluster); Close removes it.
	copyDir string
	// cred is what the kubeconfig's user authenticates with (the
	// preflight's credentials check).
	cred credential
	// debugNS is where the node debug pods go (debug_namespace, else
	// namespace).
	debugNS string
	// api bounds every API call (intervals.kube_api).
	api   config.Interval
	log   *remote.CommandLog
	grace time.Duration
	// logf is the run's log (kubeaccess.Options.Logf); nil = none.
	logf func(format string, args ...any)
	// replaced is told of every runner's move to a replacement pod
	// (kubeaccess.Options.Replaced); nil = nobody.
	replaced func(kubeaccess.PodReplacement)
	// wsProtocols overrides the WebSocket subprotocols offered (tests:
	// v4.channel.k8s.io exercises the WebSocket data path against a server
	// that has no v5); nil = client-go's v5.
	wsProtocols []string
	// spdyOnly is set once the API server refused an exec's WebSocket
	// upgrade (exec.go's protocolExecutor): every later exec of this
	// cluster goes straight to SPDY instead of paying a refused upgrade.
	spdyOnly atomic.Bool
}

// NewCluster builds the client from k's kubeconfig and context, loaded as
// kubectl loads them: k.Kubeconfig, else every file of $KUBECONFIG merged
// (first wins), else ~/.kube/config; k.Context, else the current context;
// with no kubeconfig at all, the pod's service account (in-cluster: the
// harness running as a Kubernetes Job). From a kubeconfig, the client is
// built from the run's private copy (privateCopy), so refreshed
// credentials go there; Close removes it.
func NewCluster(k config.Kubernetes, o kubeaccess.Options) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.Kubeconfig != "" {
		rules.ExplicitPath = k.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		where := "kubeconfig " + k.Kubeconfig
		if k.Kubeconfig == "" {
			where = "kubeconfig ($KUBECONFIG, else ~/.kube/config; in a pod, its service account)"
		}
		if k.Context != "" {
			where += ", context " + k.Context
		}
		return nil, fmt.Errorf("kubernetes: %s (hypervisors.kubernetes.kubeconfig, context): %w", where, err)
	}
	source := describeSource(cc, rules, k.Context)
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s (hypervisors.kubernetes.kubeconfig, context): %w", source, err)
	}
	var copyPath string
	var cred credential
	if !clientcmdapi.IsConfigEmpty(&raw) {
		// From a kubeconfig (not in-cluster): the client is built from
		// the run's own copy (kubeconfig.go).
		copyPath, cred, err = privateCopy(&raw, k.Context)
		if err == nil {
			rc, err = fromCopy(copyPath)
		}
		if err != nil {
			if copyPath != "" {
				os.RemoveAll(filepath.Dir(copyPath))
			}
			return nil, fmt.Errorf("kubernetes: %s (hypervisors.kubernetes.kubeconfig, context): the run's copy: %w", source, err)
		}
	}
	c, err := newCluster(rc, k, o)
	if err != nil {
		if copyPath != "" {
			os.RemoveAll(filepath.Dir(copyPath))
		}
		return nil, err
	}
	c.source = source
	c.cred = cred
	if copyPath != "" {
		c.copyDir = filepath.Dir(copyPath)
	}
	return c, nil
}

// KubeconfigCopy is the run's private copy of the kubeconfig the client
// was built from ("" in-cluster, or after Close).
func (c *Cluster) KubeconfigCopy() string {
	if c.copyDir == "" {
		return ""
	}
	return filepath.Join(c.copyDir, kubeconfigFile)
}

// Open is NewCluster as a kubeaccess.Open: what the programs that reach a
// cluster (the suites, through the framework) hand the harness, which
// imports no client-go.
func Open(k config.Kubernetes, o kubeaccess.Options) (kubeaccess.Cluster, error) {
	c, err := NewCluster(k, o)
	if err != nil {
		return nil, err
	}
	return c, nil
}

var _ kubeaccess.Cluster = (*Cluster)(nil)

// describeSource names where the credentials came from, for messages:
// "kubeconfig FILE[:FILE…], context C (user U)" or the service account.
func describeSource(cc clientcmd.ClientConfig, rules *clientcmd.ClientConfigLoadingRules, ctxName string) string {
	raw, err := cc.RawConfig()
	if err != nil || len(raw.Contexts) == 0 {
		return "in-cluster service account (no kubeconfig)"
	}
	var files []string
	for _, f := range rules.GetLoadingPrecedence() {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	s := fmt.Sprintf("kubeconfig %s, context %s", strings.Join(files, string(os.PathListSeparator)), ctxName)
	if kc, ok := raw.Contexts[ctxName]; ok && kc.AuthInfo != "" {
		s += " (user " + kc.AuthInfo + ")"
	}
	return s
}

// Source is where the cluster's credentials came from (kubeconfig files,
// context, user; or the in-cluster service account).
func (c *Cluster) Source() string {
	if c.source == "" {
		return "the cluster"
	}
	return c.source
}

func newCluster(rc *rest.Config, k config.Kubernetes, o kubeaccess.Options) (*Cluster, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: client for %s: %w", rc.Host, err)
	}
	c := clusterFor(cs, k, o)
	c.rest = rc
	return c, nil
}

func clusterFor(cs kubernetes.Interface, k config.Kubernetes, o kubeaccess.Options) *Cluster {
	if o.KillGrace <= 0 {
		o.KillGrace = remote.DefaultKillGrace
	}
	if o.API.Timeout <= 0 || o.API.Poll <= 0 {
		o.API = config.DefaultIntervals[config.IntervalKubeAPI]
	}
	debugNS := k.DebugNamespace
	if debugNS == "" {
		debugNS = k.Namespace
	}
	if o.Logf != nil {
		routeClientLog(o.Logf)
	}
	return &Cluster{client: cs, namespace: k.Namespace, debugNS: debugNS, selector: k.PodSelector, container: k.Container, nodeNames: k.NodeNames,
		api: o.API, log: o.Log, grace: o.KillGrace, logf: o.Logf, replaced: o.Replaced}
}

// FindPod finds the OVS pod on node: the one Running pod in the namespace
// that matches the selector and runs there, with the container ready.
func (c *Cluster) FindPod(ctx context.Context, node string) (kubeaccess.Pod, error) {
	var list *corev1.PodList
	err := c.read(ctx, fmt.Sprintf("listing the OVS pods (namespace %s, selector %q, node %s)", c.namespace, c.selector, node), func(ctx context.Context) (err error) {
		list, err = c.client.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{
			LabelSelector: c.selector,
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
		})
		return err
	})
	if err != nil {
		return kubeaccess.Pod{}, err
	}
	return c.pickPod(list.Items, node)
}

// pickPod chooses node's OVS pod among pods: the one Running (not being
// deleted) on node, with the container ready.
func (c *Cluster) pickPod(pods []corev1.Pod, node string) (kubeaccess.Pod, error) {
	where := fmt.Sprintf("namespace %s, selector %q, node %s", c.namespace, c.selector, node)
	var onNode, running []corev1.Pod
	for _, p := range pods {
		// The API server applies a field selector; client-go's fake
		// clientset (the unit tests) does not, and Resolve lists every
		// node's pods.
		if p.Spec.NodeName != node {
			continue
		}
		onNode = append(onNode, p)
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	switch {
	case len(onNode) == 0:
		return kubeaccess.Pod{}, fmt.Errorf("kubernetes: no OVS pod found (%s): is the node name right (hypervisors.kubernetes.node_names) and does the OVS DaemonSet run there?", where)
	case len(running) == 0:
		return kubeaccess.Pod{}, fmt.Errorf("kubernetes: no Running OVS pod (%s); found %s", where, describe(onNode))
	case len(running) > 1:
		return kubeaccess.Pod{}, fmt.Errorf("kubernetes: %d Running OVS pods (%s), expected one: %s", len(running), where, describe(running))
	}
	p := running[0]
	pod := kubeaccess.Pod{Node: node, Namespace: p.Namespace, Name: p.Name, Container: c.container, UID: string(p.UID)}
	if err := c.checkContainer(p, where); err != nil {
		return kubeaccess.Pod{}, err
	}
	for _, ct := range p.Spec.Containers {
		if ct.Name == c.container {
			pod.Image = ct.Image
		}
	}
	return pod, nil
}

// checkContainer says whether p has the configured container, ready.
func (c *Cluster) checkContainer(p corev1.Pod, where string) error {
	var names []string
	found := false
	for _, ct := range p.Spec.Containers {
		names = append(names, ct.Name)
		found = found || ct.Name == c.container
	}
	if !found {
		return fmt.Errorf("kubernetes: pod %s/%s (%s) has no container %s; its containers: %s (hypervisors.kubernetes.container, or preset)", p.Namespace, p.Name, where, c.container, strings.Join(names, ", "))
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == c.container {
			if !st.Ready {
				return fmt.Errorf("kubernetes: container %s of pod %s/%s (%s) is not ready (%s)", c.container, p.Namespace, p.Name, where, stateOf(st.State))
			}
			return nil
		}
	}
	return fmt.Errorf("kubernetes: container %s of pod %s/%s (%s) is not ready (no status reported)", c.container, p.Namespace, p.Name, where)
}

// describe lists pods as "name (phase)".
func describe(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		s := fmt.Sprintf("%s (%s", p.Name, p.Status.Phase)
		if p.DeletionTimestamp != nil {
			s += ", terminating"
		}
		out = append(out, s+")")
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func stateOf(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s, exit %d", s.Terminated.Reason, s.Terminated.ExitCode)
	case s.Running != nil:
		return "running, readiness probe failing"
	}
	return "no state"
}

// Runner maps hypervisor t to its node (Resolve), finds the node's OVS pod
// and returns its runner, named "hypervisor <hv> (pod <ns>/<pod>,
// container <c>)", and how the node was matched.
func (c *Cluster) Runner(ctx context.Context, t kubeaccess.Target) (kubeaccess.PodRunner, kubeaccess.NodeMatch, error) {
	if c.rest == nil {
		return nil, kubeaccess.NodeMatch{}, errors.New("kubernetes: no REST config (a cluster for discovery only)")
	}
	pod, m, err := c.Resolve(ctx, t)
	if err != nil {
		return nil, m, err
	}
	r := c.runnerFor(t.Hypervisor, pod)
	r.follow = true
	return r, m, nil
}

func (c *Cluster) runnerFor(hv string, pod kubeaccess.Pod) *Runner {
	return &Runner{c: c, hv: hv, pod: pod, name: runnerName(hv, pod)}
}

func runnerName(hv string, pod kubeaccess.Pod) string {
	return fmt.Sprintf("hypervisor %s (%s)", hv, pod)
}
