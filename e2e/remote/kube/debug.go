package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// The labels of every node debug pod: the sweeper and the leak check find
// them by these, never by name alone.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "asap2-e2e"
	LabelRunID     = "asap2-e2e/run-id"
	LabelPrefix    = "asap2-e2e/name-prefix"
	LabelRole      = "asap2-e2e/role"
	RoleNodeDebug  = "node-debug"
	// DebugContainer is the debug pod's one container.
	DebugContainer = "debug"
	// HostRootMount is where a debug pod of debug_image: auto mounts the
	// host's / (read-only).
	HostRootMount = "/host"
)

// debugLoop is the pod's process: it idles until TERM (the pod's delete).
// The commands run through exec beside it.
const debugLoop = `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`

// DebugPodSpec is the pod CreateDebugPod creates in namespace ns. Host
// network (it must see the host's interfaces, as the OVS pod does) and
// privileged (tcpdump opens raw sockets, ethtool and tc query the
// drivers), pinned by nodeName and tolerating every taint (kubectl debug
// node does the same), never restarted, no service account token. Not host
// PID: the tools need the host's network namespace only, and the command
// wrapper kills its process group inside the pod's own PID namespace.
//
// With in.HostRoot (debug_image: auto) the host's / is mounted there
// read-only (hostPath) and each command runs under `chroot HostRoot`
// inside the wrapper, which stays in the container (podCommand): the
// image is the OVS pod's, already on the node, and the tools are the
// host's own. chroot rather than nsenter into PID 1's mount namespace (as
// Kubernetes e2e's HostExec does): nsenter needs hostPID, which this pod
// does without (see above), and so would widen what admission must allow
// (the preflight's dry run asks for exactly this spec); chroot needs only
// the mount, and the network namespace is the host's already.
func DebugPodSpec(ns string, in kubeaccess.DebugPodInput) *corev1.Pod {
	yes, no := true, false
	grace := int64(5)
	var deadline *int64
	if in.ActiveDeadline > 0 {
		d := int64((in.ActiveDeadline + time.Second - 1) / time.Second)
		deadline = &d
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if in.HostRoot != "" {
		dir := corev1.HostPathDirectory
		volumes = []corev1.Volume{{Name: "host-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &dir}}}}
		mounts = []corev1.VolumeMount{{Name: "host-root", MountPath: in.HostRoot, ReadOnly: true}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: in.Name, Namespace: ns,
			Labels: map[string]string{
				LabelManagedBy: ManagedBy, LabelRole: RoleNodeDebug,
				LabelRunID: in.RunID, LabelPrefix: in.Prefix,
			},
			Annotations: map[string]string{"asap2-e2e/node": in.Node},
		},
		Spec: corev1.PodSpec{
			NodeName:                      in.Node,
			HostNetwork:                   true,
			DNSPolicy:                     corev1.DNSClusterFirstWithHostNet,
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         deadline,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes:                       volumes,
			Containers: []corev1.Container{{
				Name:            DebugContainer,
				Image:           in.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"sh", "-c", debugLoop},
				SecurityContext: &corev1.SecurityContext{Privileged: &yes},
				VolumeMounts:    mounts,
			}},
		},
	}
}

// CreateDebugPod creates in's pod in the cluster's namespace, registers
// its delete with in.Cleaner as soon as the API accepted it (also when the
// pod never runs), and waits until its container runs. A pod that is not
// Running within in.Interval, or fails, is an error with its phase,
// conditions, container state and events.
func (c *Cluster) CreateDebugPod(ctx context.Context, in kubeaccess.DebugPodInput) (kubeaccess.Pod, error) {
	if in.Image == "" {
		return kubeaccess.Pod{}, fmt.Errorf("kubernetes: debug pod for node %s: no image (hypervisors.kubernetes.debug_image)", in.Node)
	}
	if in.Cleaner == nil {
		return kubeaccess.Pod{}, fmt.Errorf("kubernetes: debug pod %s: no cleaner to register its delete with", in.Name)
	}
	in, err := c.resolveDebugImage(ctx, in)
	if err != nil {
		return kubeaccess.Pod{}, err
	}
	ref := c.debugNS + "/" + in.Name
	cctx, cancel := c.apiCall(ctx)
	_, err = c.client.CoreV1().Pods(c.debugNS).Create(cctx, DebugPodSpec(c.debugNS, in), metav1.CreateOptions{})
	cancel()
	if apierrors.IsAlreadyExists(err) {
		// A create whose answer was lost and was sent again, or a pod of
		// this run: adopt it if it carries this run's id.
		p, gerr := c.getPod(ctx, in.Name)
		if gerr != nil || p.Labels[LabelRunID] != in.RunID {
			return kubeaccess.Pod{}, fmt.Errorf("kubernetes: creating debug pod %s on node %s: %w", ref, in.Node, err)
		}
		err = nil
	}
	if err != nil {
		// A create cut by intervals.kube_api may still have been accepted:
		// register the delete (a 404 is done) before giving up.
		if errors.Is(err, context.DeadlineExceeded) {
			in.Cleaner.Defer("delete debug pod "+ref, func(ctx context.Context) error {
				return c.DeletePod(ctx, in.Name, in.Interval)
			})
		}
		return kubeaccess.Pod{}, c.apiError(fmt.Sprintf("creating debug pod %s on node %s (image %s)", ref, in.Node, in.Image), err)
	}
	in.Cleaner.Defer("delete debug pod "+ref, func(ctx context.Context) error {
		return c.DeletePod(ctx, in.Name, in.Interval)
	})
	if in.Logf != nil {
		in.Logf("debug pod %s created on node %s (image %s); waiting up to %s for it to run", ref, in.Node, in.Image, in.Interval.Timeout)
	}
	var last *corev1.Pod
	err = wait.Poll(ctx, in.Interval, fmt.Sprintf("debug pod %s on node %s Running (intervals.%s)", ref, in.Node, config.IntervalDebugPod), func(ctx context.Context) (bool, error) {
		p, err := c.getPod(ctx, in.Name)
		if err != nil {
			return false, err
		}
		last = p
		switch p.Status.Phase {
		case corev1.PodFailed, corev1.PodSucceeded:
			return false, wait.Stop(fmt.Errorf("debug pod %s on node %s ended (%s)", ref, in.Node, p.Status.Phase))
		case corev1.PodRunning:
			for _, st := range p.Status.ContainerStatuses {
				if st.Name == DebugContainer && st.State.Running != nil {
					return true, nil
				}
			}
		}
		for _, st := range p.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil && (slices.Contains(hopelessWaits, w.Reason) || HopelessPull(*w)) {
				return false, wait.Stop(fmt.Errorf("debug pod %s on node %s cannot start: %s: %s (hypervisors.kubernetes.debug_image %s: mirror it into a registry the nodes can pull from)", ref, in.Node, w.Reason, w.Message, in.Image))
			}
		}
		return false, nil
	})
	if err != nil {
		return kubeaccess.Pod{}, fmt.Errorf("kubernetes: %w; %s", err, c.describeDebugPod(ctx, in.Name, last))
	}
	return kubeaccess.Pod{Node: in.Node, Namespace: c.debugNS, Name: in.Name, Container: DebugContainer, Image: in.Image, HostRoot: in.HostRoot}, nil
}

// resolveDebugImage turns debug_image: auto into the image of the OVS
// container on in.Node (the pod runs there, so the image is on the node and
// nothing is pulled) with the host's / at HostRootMount. Any other image
// is kept as given.
func (c *Cluster) resolveDebugImage(ctx context.Context, in kubeaccess.DebugPodInput) (kubeaccess.DebugPodInput, error) {
	if in.Image != config.DebugImageAuto {
		return in, nil
	}
	pod, err := c.FindPod(ctx, in.Node)
	if err != nil {
		return in, fmt.Errorf("kubernetes: debug pod for node %s: hypervisors.kubernetes.debug_image auto takes the image of the OVS pod on that node: %w", in.Node, err)
	}
	return autoImage(in, pod)
}

// autoImage is in with the image of pod, the OVS pod on in.Node.
func autoImage(in kubeaccess.DebugPodInput, pod kubeaccess.Pod) (kubeaccess.DebugPodInput, error) {
	if pod.Node != in.Node {
		return in, fmt.Errorf("kubernetes: debug pod for node %s: the OVS pod %s/%s runs on node %s, not there (hypervisors.kubernetes.debug_image auto)", in.Node, pod.Namespace, pod.Name, pod.Node)
	}
	if pod.Image == "" {
		return in, fmt.Errorf("kubernetes: debug pod for node %s: the OVS pod %s/%s names no image for container %s; set hypervisors.kubernetes.debug_image to an image instead of auto", in.Node, pod.Namespace, pod.Name, pod.Container)
	}
	in.Image, in.HostRoot = pod.Image, HostRootMount
	return in, nil
}

// hopelessWaits are container waiting reasons no retry of the kubelet
// cures: waiting them out would only delay the error.
var hopelessWaits = []string{"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError"}

// HopelessPull reports whether a container waiting on its image will never
// get it, whatever the kubelet's back-off: the registry says the image is
// not there or refuses the credentials, or the registry's name does not
// resolve (an air-gapped cloud without a mirror). Timeouts, refused
// connections and 429/5xx may pass and are waited out. The messages are
// the container runtime's pull errors as the kubelet passes them on (for
// ErrImagePull, and for ImagePullBackOff since the kubelet appends the
// last error to the back-off message).
func HopelessPull(w corev1.ContainerStateWaiting) bool {
	if w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff" {
		return false
	}
	m := strings.ToLower(w.Message)
	for _, s := range []string{": not found", "code = notfound", "manifest unknown", "repository does not exist",
		"401 unauthorized", "403 forbidden", "pull access denied", "insufficient_scope", "no such host"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// describeDebugPod says what the pod looked like last: phase, conditions,
// the container's state and the pod's events (those the API still has).
func (c *Cluster) describeDebugPod(ctx context.Context, name string, p *corev1.Pod) string {
	var parts []string
	if p == nil {
		parts = append(parts, "the pod was never read back")
	} else {
		phase := string(p.Status.Phase)
		if phase == "" {
			phase = "no phase"
		}
		parts = append(parts, "phase "+phase)
		if p.Status.Reason != "" || p.Status.Message != "" {
			parts = append(parts, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message))
		}
		var conds []string
		for _, cd := range p.Status.Conditions {
			s := fmt.Sprintf("%s=%s", cd.Type, cd.Status)
			if cd.Reason != "" || cd.Message != "" {
				s += " (" + strings.TrimSpace(cd.Reason+": "+cd.Message) + ")"
			}
			conds = append(conds, s)
		}
		if len(conds) > 0 {
			parts = append(parts, "conditions "+strings.Join(conds, ", "))
		}
		for _, st := range p.Status.ContainerStatuses {
			parts = append(parts, "container "+st.Name+" "+stateOf(st.State))
		}
	}
	var evs *corev1.EventList
	err := c.read(context.WithoutCancel(ctx), "listing the events of pod "+c.debugNS+"/"+name, func(ctx context.Context) (err error) {
		evs, err = c.client.CoreV1().Events(c.debugNS).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name}.String(),
		})
		return err
	})
	if err != nil {
		parts = append(parts, "events not readable: "+err.Error())
		return strings.Join(parts, "; ")
	}
	var items []corev1.Event
	for _, e := range evs.Items {
		// The fake clientset of the unit tests ignores field selectors.
		if e.InvolvedObject.Name == name && (e.InvolvedObject.Kind == "" || e.InvolvedObject.Kind == "Pod") {
			items = append(items, e)
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	if len(items) > 8 {
		items = items[len(items)-8:]
	}
	if len(items) == 0 {
		parts = append(parts, "no events")
	}
	for _, e := range items {
		s := fmt.Sprintf("event %s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message))
		if e.Count > 1 {
			s += fmt.Sprintf(" (x%d)", e.Count)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// getPod reads one pod, bounded by intervals.kube_api (one attempt: the
// callers poll).
func (c *Cluster) getPod(ctx context.Context, name string) (*corev1.Pod, error) {
	gctx, cancel := c.apiCall(ctx)
	defer cancel()
	p, err := c.client.CoreV1().Pods(c.debugNS).Get(gctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, c.apiError("reading pod "+c.debugNS+"/"+name, err)
	}
	return p, err
}

// DeletePod deletes the debug pod name (in DebugNamespace) and waits, within iv, until it is gone;
// a pod already gone is done.
func (c *Cluster) DeletePod(ctx context.Context, name string, iv wait.Interval) error {
	ref := c.debugNS + "/" + name
	dctx, cancel := c.apiCall(ctx)
	err := c.client.CoreV1().Pods(c.debugNS).Delete(dctx, name, metav1.DeleteOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return c.apiError("deleting pod "+ref, err)
	}
	return wait.Poll(ctx, iv, fmt.Sprintf("pod %s gone (intervals.%s)", ref, config.IntervalDebugPod), func(ctx context.Context) (bool, error) {
		_, err := c.getPod(ctx, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// NewClusterForClient is a Cluster on an existing clientset (client-go's
// fake in tests): discovery, debug pods and sweeps, no exec (no REST config).
func NewClusterForClient(cs kubernetes.Interface, k config.Kubernetes, o kubeaccess.Options) *Cluster {
	return clusterFor(cs, k, o)
}

// Namespace is where the OVS pods are.
func (c *Cluster) Namespace() string { return c.namespace }

// RunnerIn is hypervisor hv's runner in pod (e.g. a debug pod), named
// "hypervisor <hv> (pod <ns>/<pod>, container <c>)".
func (c *Cluster) RunnerIn(hv string, pod kubeaccess.Pod) (kubeaccess.PodRunner, error) {
	if c.rest == nil {
		return nil, errors.New("kubernetes: no REST config (a cluster for discovery only)")
	}
	return c.runnerFor(hv, pod), nil
}

// KindDebugPod is a node debug pod's kind in sweep reports.
const KindDebugPod = "kubernetes pod"

// SweepDebugPods lists the debug pods in selects (label selector
// managed-by, role and prefix; the run id too when given) and deletes them
// when in.Delete is set. It returns every pod selected; those not deleted
// are still there.
func (c *Cluster) SweepDebugPods(ctx context.Context, in kubeaccess.SweepInput) ([]kubeaccess.SweptPod, error) {
	n := 0
	for _, b := range []bool{in.RunID != "", in.OlderThan > 0, in.All} {
		if b {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("kubernetes: sweep: select with exactly one of a run id, an age and all")
	}
	if in.Prefix == "" {
		return nil, errors.New("kubernetes: sweep: no name prefix")
	}
	set := labels.Set{LabelManagedBy: ManagedBy, LabelRole: RoleNodeDebug, LabelPrefix: in.Prefix}
	if in.RunID != "" {
		set[LabelRunID] = in.RunID
	}
	var list *corev1.PodList
	err := c.read(ctx, fmt.Sprintf("listing debug pods in %s (%s)", c.debugNS, set), func(ctx context.Context) (err error) {
		list, err = c.client.CoreV1().Pods(c.debugNS).List(ctx, metav1.ListOptions{LabelSelector: set.String()})
		return err
	})
	if err != nil {
		return nil, err
	}
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	var out []kubeaccess.SweptPod
	for _, p := range list.Items {
		// The fake clientset filters by labels too; the name prefix is
		// checked here as the OpenStack sweep checks names.
		if !labels.SelectorFromSet(set).Matches(labels.Set(p.Labels)) || !strings.HasPrefix(p.Name, in.Prefix+"-") {
			continue
		}
		if in.OlderThan > 0 && now().Sub(p.CreationTimestamp.Time) < in.OlderThan {
			continue
		}
		created := p.CreationTimestamp.UTC()
		s := kubeaccess.SweptPod{Kind: KindDebugPod, ID: p.Namespace + "/" + p.Name, Name: p.Name, CreatedAt: &created,
			Tags: []string{LabelRunID + "=" + p.Labels[LabelRunID]}, Reason: "node " + p.Spec.NodeName, Action: "would delete"}
		if in.Delete {
			if err := c.DeletePod(ctx, p.Name, in.Interval); err != nil {
				s.Action, s.Error = "failed", err.Error()
			} else {
				s.Action = "deleted"
			}
		}
		if in.Logf != nil {
			in.Logf("%s %s %s (%s, %s)", s.Action, s.Kind, s.ID, s.Reason, s.Tags[0])
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
