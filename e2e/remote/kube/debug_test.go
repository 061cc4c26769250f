package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// stack is a LIFO cleaner as the suites' DeferCleanup and fixtures.Stack.
type stack struct{ steps []step }

type step struct {
	what string
	fn   func(context.Context) error
}

func (s *stack) Defer(what string, fn func(context.Context) error) {
	s.steps = append(s.steps, step{what, fn})
}

func (s *stack) run(t *testing.T) {
	t.Helper()
	for i := len(s.steps) - 1; i >= 0; i-- {
		if err := s.steps[i].fn(context.Background()); err != nil {
			t.Errorf("%s: %v", s.steps[i].what, err)
		}
	}
}

var quick = wait.Interval{Timeout: 400 * time.Millisecond, Poll: 20 * time.Millisecond}

const (
	runID   = "20261203t101500-ab12"
	podName = "asap2e2e-20261203t101500-ab12-debug-cmp-1"
)

func debugInput(cl kubeaccess.Cleaner) kubeaccess.DebugPodInput {
	return kubeaccess.DebugPodInput{Name: podName, Prefix: "asap2e2e", RunID: runID, Node: "cmp-1",
		Image: "registry.example/tools/netshoot:v0.13", Interval: quick, Cleaner: cl}
}

// onCreate makes the fake API server give every created pod status st, as
// a kubelet would report it.
func onCreate(cs *fake.Clientset, st corev1.PodStatus) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Status = st
		return false, nil, nil
	})
}

func running() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
		{Name: DebugContainer, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
}

func TestCreateDebugPod(t *testing.T) {
	cs := fake.NewClientset()
	onCreate(cs, running())
	c := clusterFor(cs, mosk, kubeaccess.Options{})
	var cl stack
	pod, err := c.CreateDebugPod(context.Background(), debugInput(&cl))
	if err != nil {
		t.Fatal(err)
	}
	if want := (kubeaccess.Pod{Node: "cmp-1", Namespace: "openstack", Name: podName, Container: DebugContainer, Image: "registry.example/tools/netshoot:v0.13"}); pod != want {
		t.Errorf("pod %+v, want %+v", pod, want)
	}
	p, err := cs.CoreV1().Pods("openstack").Get(context.Background(), podName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	if s.NodeName != "cmp-1" || !s.HostNetwork || s.HostPID || s.RestartPolicy != corev1.RestartPolicyNever ||
		s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Errorf("spec: node %q hostNetwork %v hostPID %v restart %s token %v", s.NodeName, s.HostNetwork, s.HostPID, s.RestartPolicy, s.AutomountServiceAccountToken)
	}
	if len(s.Tolerations) != 1 || s.Tolerations[0].Operator != corev1.TolerationOpExists || s.Tolerations[0].Key != "" {
		t.Errorf("tolerations %+v, want one that tolerates every taint", s.Tolerations)
	}
	if len(s.Containers) != 1 {
		t.Fatalf("containers %+v", s.Containers)
	}
	ct := s.Containers[0]
	if ct.Name != DebugContainer || ct.Image != "registry.example/tools/netshoot:v0.13" || ct.SecurityContext == nil ||
		ct.SecurityContext.Privileged == nil || !*ct.SecurityContext.Privileged {
		t.Errorf("container %+v", ct)
	}
	want := map[string]string{LabelManagedBy: ManagedBy, LabelRole: RoleNodeDebug, LabelRunID: runID, LabelPrefix: "asap2e2e"}
	for k, v := range want {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	if len(cl.steps) != 1 || cl.steps[0].what != "delete debug pod openstack/"+podName {
		t.Fatalf("cleanups %+v, want the pod's delete", cl.steps)
	}
	cl.run(t)
	if _, err := cs.CoreV1().Pods("openstack").Get(context.Background(), podName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after teardown: %v, want NotFound", err)
	}
	// A second delete (an interrupted teardown run again) is done at once.
	if err := c.DeletePod(context.Background(), podName, quick); err != nil {
		t.Errorf("delete of a gone pod: %v", err)
	}
}

// A pod that never runs: the error names the pod, node, interval, phase,
// conditions, container state and events; its delete is registered anyway
// and removes it at teardown.
func TestDebugPodNotRunning(t *testing.T) {
	cs := fake.NewClientset(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: podName + ".1", Namespace: "openstack"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: podName, Namespace: "openstack"},
		Type:           "Warning", Reason: "Failed", Count: 4,
		Message: `Failed to pull image "registry.example/tools/netshoot:v0.13": not found`,
	}, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "other.1", Namespace: "openstack"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "other"},
		Type:           "Warning", Reason: "BackOff", Message: "about another pod",
	})
	onCreate(cs, corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [debug]"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: DebugContainer, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}})
	c := clusterFor(cs, mosk, kubeaccess.Options{})
	var cl stack
	_, err := c.CreateDebugPod(context.Background(), debugInput(&cl))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, w := range []string{
		"debug pod openstack/" + podName + " on node cmp-1 Running (intervals.debug_pod): gave up after 400ms",
		"phase Pending",
		"conditions ContainersReady=False (ContainersNotReady: containers with unready status: [debug])",
		"container debug waiting: ImagePullBackOff",
		`event Warning Failed: Failed to pull image "registry.example/tools/netshoot:v0.13": not found (x4)`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nlacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "about another pod") {
		t.Errorf("error shows another pod's event: %v", err)
	}
	if len(cl.steps) != 1 {
		t.Fatalf("cleanups %d, want the delete registered although the pod never ran", len(cl.steps))
	}
	cl.run(t)
	if _, err := cs.CoreV1().Pods("openstack").Get(context.Background(), podName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after teardown: %v, want NotFound", err)
	}
}

// States no wait cures stop the wait at once.
func TestDebugPodHopeless(t *testing.T) {
	cases := []struct {
		name string
		st   corev1.PodStatus
		want string
	}{
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "node low on memory"},
			"ended (Failed); phase Failed; Evicted node low on memory"},
		{"bad image name", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: DebugContainer,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "InvalidImageName", Message: `couldn't parse image name "x y"`}}}}},
			`cannot start: InvalidImageName: couldn't parse image name "x y"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			onCreate(cs, c.st)
			cl := clusterFor(cs, mosk, kubeaccess.Options{})
			var st stack
			in := debugInput(&st)
			in.Interval = wait.Interval{Timeout: time.Hour, Poll: time.Hour}
			start := time.Now()
			_, err := cl.CreateDebugPod(context.Background(), in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("waited %s for a hopeless pod", time.Since(start))
			}
			if len(st.steps) != 1 {
				t.Errorf("cleanups %d, want the delete", len(st.steps))
			}
		})
	}
}

func TestCreateDebugPodRefusedOrTaken(t *testing.T) {
	t.Run("forbidden", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, podName, errors.New(`violates PodSecurity "baseline:latest": privileged`))
		})
		var st stack
		_, err := clusterFor(cs, mosk, kubeaccess.Options{}).CreateDebugPod(context.Background(), debugInput(&st))
		if err == nil || !strings.Contains(err.Error(), "creating debug pod openstack/"+podName+" on node cmp-1 (image registry.example/tools/netshoot:v0.13)") || !strings.Contains(err.Error(), "PodSecurity") {
			t.Errorf("got %v", err)
		}
		if len(st.steps) != 0 {
			t.Errorf("a refused create registered %d deletes", len(st.steps))
		}
	})
	t.Run("a pod of this run is adopted", func(t *testing.T) {
		old := DebugPodSpec("openstack", debugInput(nil))
		old.Status = running()
		cs := fake.NewClientset(old)
		var st stack
		if _, err := clusterFor(cs, mosk, kubeaccess.Options{}).CreateDebugPod(context.Background(), debugInput(&st)); err != nil {
			t.Fatal(err)
		}
		if len(st.steps) != 1 {
			t.Errorf("cleanups %d, want the adopted pod's delete", len(st.steps))
		}
	})
	t.Run("a pod of another run is not", func(t *testing.T) {
		in := debugInput(nil)
		in.RunID = "20261202t090000-ffff"
		cs := fake.NewClientset(DebugPodSpec("openstack", in))
		var st stack
		_, err := clusterFor(cs, mosk, kubeaccess.Options{}).CreateDebugPod(context.Background(), debugInput(&st))
		if err == nil || !apierrors.IsAlreadyExists(errors.Unwrap(err)) {
			t.Errorf("got %v, want already exists", err)
		}
		if len(st.steps) != 0 {
			t.Errorf("another run's pod got a delete registered")
		}
	})
	t.Run("no image", func(t *testing.T) {
		in := debugInput(&stack{})
		in.Image = ""
		_, err := clusterFor(fake.NewClientset(), mosk, kubeaccess.Options{}).CreateDebugPod(context.Background(), in)
		if err == nil || !strings.Contains(err.Error(), "node cmp-1: no image (hypervisors.kubernetes.debug_image)") {
			t.Errorf("got %v", err)
		}
	})
}

func TestSweepDebugPods(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	mk := func(name, prefix, run string, age time.Duration) *corev1.Pod {
		p := DebugPodSpec("openstack", kubeaccess.DebugPodInput{Name: name, Prefix: prefix, RunID: run, Node: "cmp-1", Image: "img"})
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		return p
	}
	objs := []runtime.Object{
		mk(podName, "asap2e2e", runID, time.Hour),
		mk("asap2e2e-20261201t080000-cdef-debug-cmp-2", "asap2e2e", "20261201t080000-cdef", 50*time.Hour),
		mk("other-20261201t080000-cdef-debug-cmp-2", "other", "20261201t080000-cdef", 50*time.Hour), // another prefix
		ovsPod("asap2e2e-lookalike", "cmp-1"),                                                       // the prefix in its name, not our labels
	}
	sweep := func(in kubeaccess.SweepInput) ([]kubeaccess.SweptPod, *fake.Clientset) {
		t.Helper()
		cs := fake.NewClientset(objs...)
		in.Prefix, in.Interval, in.Now = "asap2e2e", quick, func() time.Time { return now }
		got, err := clusterFor(cs, mosk, kubeaccess.Options{}).SweepDebugPods(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return got, cs
	}
	names := func(ps []kubeaccess.SweptPod) string {
		var n []string
		for _, p := range ps {
			n = append(n, p.Name+":"+p.Action)
		}
		return strings.Join(n, ",")
	}
	got, _ := sweep(kubeaccess.SweepInput{RunID: runID})
	if names(got) != podName+":would delete" || got[0].Reason != "node cmp-1" || got[0].Tags[0] != LabelRunID+"="+runID ||
		got[0].ID != "openstack/"+podName || got[0].Kind != "kubernetes pod" || !got[0].CreatedAt.Equal(now.Add(-time.Hour)) {
		t.Errorf("by run id: %+v", got)
	}
	got, _ = sweep(kubeaccess.SweepInput{OlderThan: 24 * time.Hour})
	if names(got) != "asap2e2e-20261201t080000-cdef-debug-cmp-2:would delete" {
		t.Errorf("by age: %s", names(got))
	}
	got, cs := sweep(kubeaccess.SweepInput{All: true, Delete: true})
	if names(got) != "asap2e2e-20261201t080000-cdef-debug-cmp-2:deleted,"+podName+":deleted" {
		t.Errorf("all: %s", names(got))
	}
	left, _ := cs.CoreV1().Pods("openstack").List(context.Background(), metav1.ListOptions{})
	var l []string
	for _, p := range left.Items {
		l = append(l, p.Name)
	}
	if strings.Join(l, ",") != "asap2e2e-lookalike,other-20261201t080000-cdef-debug-cmp-2" {
		t.Errorf("left after the sweep: %v (only our debug pods may go)", l)
	}
	if _, err := clusterFor(fake.NewClientset(), mosk, kubeaccess.Options{}).SweepDebugPods(context.Background(), kubeaccess.SweepInput{Prefix: "asap2e2e", RunID: runID, All: true}); err == nil {
		t.Error("two selectors: want an error")
	}
}

// A pull no back-off cures stops the wait at once, named; a transient one
// is waited out. The messages are containerd's pull errors as the kubelet
// reports them (containerd core/remotes/docker resolver and authorizer
// wording; the kubelet's "rpc error: code = ... desc = failed to pull and
// unpack image" prefix; ImagePullBackOff's "Back-off pulling image ...:
// ErrImagePull: <last error>").
func TestHopelessPull(t *testing.T) {
	cases := []struct {
		reason, message string
		hopeless        bool
	}{
		{"ErrImagePull", `rpc error: code = NotFound desc = failed to pull and unpack image "registry.example/tools/netshoot:v0.13": failed to resolve reference "registry.example/tools/netshoot:v0.13": registry.example/tools/netshoot:v0.13: not found`, true},
		{"ImagePullBackOff", `Back-off pulling image "registry.example/tools/netshoot:v0.13": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "registry.example/tools/netshoot:v0.13": failed to resolve reference "registry.example/tools/netshoot:v0.13": registry.example/tools/netshoot:v0.13: not found`, true},
		{"ErrImagePull", `rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/nicolaka/netshoot:v0.13": failed to resolve reference "docker.io/nicolaka/netshoot:v0.13": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`, true},
		{"ErrImagePull", `rpc error: code = Unknown desc = failed to pull and unpack image "mirror.mosk.example/netshoot:v0.13": failed to resolve reference "mirror.mosk.example/netshoot:v0.13": failed to authorize: failed to fetch oauth token: unexpected status from GET request to https://mirror.mosk.example/token: 401 Unauthorized`, true},
		{"ErrImagePull", `rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/nicolaka/netshoot:v0.13": failed to resolve reference "docker.io/nicolaka/netshoot:v0.13": failed to do request: Head "https://registry-1.docker.io/v2/nicolaka/netshoot/manifests/v0.13": dial tcp: lookup registry-1.docker.io on 10.96.0.10:53: no such host`, true},
		{"ErrImagePull", `rpc error: code = Unknown desc = failed to pull and unpack image "mirror.mosk.example/netshoot:v0.13": failed to copy: httpReadSeeker: failed open: unexpected status code https://mirror.mosk.example/v2/netshoot/blobs/sha256:0a1b: 503 Service Unavailable`, false},
		{"ErrImagePull", `rpc error: code = Unknown desc = failed to pull and unpack image "mirror.mosk.example/netshoot:v0.13": failed to do request: Head "https://mirror.mosk.example/v2/netshoot/manifests/v0.13": dial tcp 198.18.40.5:443: i/o timeout`, false},
		{"ImagePullBackOff", `Back-off pulling image "mirror.mosk.example/netshoot:v0.13"`, false},
		{"ContainerCreating", `not found`, false},
	}
	for _, c := range cases {
		if got := HopelessPull(corev1.ContainerStateWaiting{Reason: c.reason, Message: c.message}); got != c.hopeless {
			t.Errorf("%s %q: hopeless %v, want %v", c.reason, c.message, got, c.hopeless)
		}
	}
	// In CreateDebugPod: the wait stops at the first look, long before the
	// interval, naming the image and the key.
	cs := fake.NewClientset()
	onCreate(cs, corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: DebugContainer,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: cases[0].message}}}}})
	in := debugInput(&stack{})
	in.Interval = wait.Interval{Timeout: time.Hour, Poll: time.Second}
	start := time.Now()
	_, err := clusterFor(cs, mosk, kubeaccess.Options{}).CreateDebugPod(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "cannot start: ErrImagePull") || !strings.Contains(err.Error(), "hypervisors.kubernetes.debug_image registry.example/tools/netshoot:v0.13") {
		t.Errorf("error %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

// The pod carries activeDeadlineSeconds (rounded up) when given, so a
// leaked pod's privileged loop ends.
func TestDebugPodActiveDeadline(t *testing.T) {
	in := debugInput(nil)
	if p := DebugPodSpec("openstack", in); p.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("no deadline given, got %d", *p.Spec.ActiveDeadlineSeconds)
	}
	in.ActiveDeadline = 90*time.Minute + 500*time.Millisecond
	if p := DebugPodSpec("openstack", in); p.Spec.ActiveDeadlineSeconds == nil || *p.Spec.ActiveDeadlineSeconds != 5401 {
		t.Errorf("deadline %v, want 5401", p.Spec.ActiveDeadlineSeconds)
	}
}
