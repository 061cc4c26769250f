package kube

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// The OVS DaemonSet in the middle of a rolling update: each node's pod
// runs another image, so a debug pod that took another node's image would
// show here.
const (
	imageCmp1 = "mirantis.azurecr.io/openstack/openvswitch:3.3-jammy-20250301"
	imageCmp2 = "mirantis.azurecr.io/openstack/openvswitch:3.3-jammy-20250517"
)

func withImage(image string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Image = image }
}

func autoInput(cl kubeaccess.Cleaner, node string) kubeaccess.DebugPodInput {
	in := debugInput(cl)
	in.Name = "asap2e2e-" + runID + "-debug-" + node
	in.Node, in.Image = node, config.DebugImageAuto
	return in
}

// debug_image auto: the pod runs the image of the OVS pod on its own node,
// mounts the host's / read-only at /host, and stays out of the host's PID
// namespace; the Pod it returns runs its commands under chroot /host.
func TestDebugImageAuto(t *testing.T) {
	cs := fake.NewClientset(
		ovsPod("openvswitch-vswitchd-default-aaaaa", "cmp-1", withImage(imageCmp1)),
		ovsPod("openvswitch-vswitchd-default-bbbbb", "cmp-2", withImage(imageCmp2)),
	)
	onCreate(cs, running())
	c := clusterFor(cs, mosk, kubeaccess.Options{})
	for _, tc := range []struct{ node, image string }{{"cmp-2", imageCmp2}, {"cmp-1", imageCmp1}} {
		var cl stack
		in := autoInput(&cl, tc.node)
		pod, err := c.CreateDebugPod(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if pod.Image != tc.image || pod.HostRoot != HostRootMount || pod.Container != DebugContainer {
			t.Errorf("node %s: pod %+v, want image %s, host root %s", tc.node, pod, tc.image, HostRootMount)
		}
		if got := podCommand(pod, "tc -s -j filter show dev 'rep 1' ingress"); got != `chroot /host /bin/sh -c 'tc -s -j filter show dev '\''rep 1'\'' ingress'` {
			t.Errorf("command %q, want it under chroot /host", got)
		}
		p, err := cs.CoreV1().Pods("openstack").Get(context.Background(), in.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := p.Spec
		if s.NodeName != tc.node || !s.HostNetwork || s.HostPID || len(s.Containers) != 1 {
			t.Fatalf("node %s: spec node %q hostNetwork %v hostPID %v, %d containers", tc.node, s.NodeName, s.HostNetwork, s.HostPID, len(s.Containers))
		}
		ct := s.Containers[0]
		if ct.Image != tc.image || ct.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("node %s: image %s (%s), want %s, not pulled again", tc.node, ct.Image, ct.ImagePullPolicy, tc.image)
		}
		if len(s.Volumes) != 1 || s.Volumes[0].HostPath == nil || s.Volumes[0].HostPath.Path != "/" {
			t.Fatalf("node %s: volumes %+v, want the host's / as a hostPath", tc.node, s.Volumes)
		}
		if len(ct.VolumeMounts) != 1 || ct.VolumeMounts[0].Name != s.Volumes[0].Name || ct.VolumeMounts[0].MountPath != "/host" || !ct.VolumeMounts[0].ReadOnly {
			t.Errorf("node %s: mounts %+v, want the host's / read-only at /host", tc.node, ct.VolumeMounts)
		}
		cl.run(t)
	}
	// An explicit image is kept, with no host mount.
	var cl stack
	pod, err := c.CreateDebugPod(context.Background(), debugInput(&cl))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cs.CoreV1().Pods("openstack").Get(context.Background(), podName, metav1.GetOptions{})
	if pod.HostRoot != "" || len(p.Spec.Volumes) != 0 || p.Spec.Containers[0].Image != "registry.example/tools/netshoot:v0.13" {
		t.Errorf("explicit image: pod %+v, volumes %+v, image %s", pod, p.Spec.Volumes, p.Spec.Containers[0].Image)
	}
	cl.run(t)
}

// No OVS pod on the node (or one that names no image): a clear error, and
// nothing is created.
func TestDebugImageAutoNoOVSPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want []string
	}{
		{"no pod on the node", []runtime.Object{ovsPod("openvswitch-vswitchd-default-aaaaa", "cmp-1", withImage(imageCmp1))},
			[]string{"debug pod for node cmp-3: hypervisors.kubernetes.debug_image auto takes the image of the OVS pod on that node", "no OVS pod found", "node cmp-3"}},
		{"pod not running", []runtime.Object{ovsPod("openvswitch-vswitchd-default-ccccc", "cmp-3", withImage(imageCmp1), func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
			[]string{"debug_image auto", "no Running OVS pod", "openvswitch-vswitchd-default-ccccc (Pending)"}},
		{"no image", []runtime.Object{ovsPod("openvswitch-vswitchd-default-ccccc", "cmp-3")},
			[]string{"debug pod for node cmp-3: the OVS pod openstack/openvswitch-vswitchd-default-ccccc names no image for container openvswitch-vswitchd", "set hypervisors.kubernetes.debug_image to an image instead of auto"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.objs...)
			creates := 0
			cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				creates++
				return false, nil, nil
			})
			var cl stack
			_, err := clusterFor(cs, mosk, kubeaccess.Options{}).CreateDebugPod(context.Background(), autoInput(&cl, "cmp-3"))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if creates != 0 || len(cl.steps) != 0 {
				t.Errorf("%d creates, %d cleanups; want none", creates, len(cl.steps))
			}
		})
	}
}

// The preflight's dry run sends the pod a run would create: with auto, the
// image of the OVS pod on the node it tries, and the host mount.
func TestPreflightDryRunsAutoImage(t *testing.T) {
	s := newRBACServer(allAccess, ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA, withImage(imageCmp1)), ovsPod("openvswitch-vswitchd-default-7hq4m", nodeB, withImage(imageCmp2)))
	var sent *corev1.Pod
	s.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sent = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		return false, nil, nil
	})
	in := preflightInput(kubeaccess.Target{Hypervisor: nodeB})
	in.DebugPod.Image = config.DebugImageAuto
	r := clusterFor(s, mosk, kubeaccess.Options{}).Preflight(context.Background(), in)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if sent == nil || s.dryRuns != 1 {
		t.Fatalf("dry runs %d, pod %v", s.dryRuns, sent)
	}
	if sent.Spec.NodeName != nodeB || sent.Spec.Containers[0].Image != imageCmp2 || len(sent.Spec.Volumes) != 1 || sent.Spec.Volumes[0].HostPath == nil {
		t.Errorf("dry run: node %s, image %s, volumes %+v; want %s, %s and the host's /", sent.Spec.NodeName, sent.Spec.Containers[0].Image, sent.Spec.Volumes, nodeB, imageCmp2)
	}
	if last := r.Checks[len(r.Checks)-1].What; !strings.Contains(last, "image auto → "+imageCmp2+", the host's / at /host) on node "+nodeB) {
		t.Errorf("check %q does not say which image auto took", last)
	}
}

// A debug pod with the host's / runs each command under chroot into it,
// inside the wrapper, which stays in the container (its /proc and process
// group ids are the pod's); a cancel still kills the chrooted command and
// its children. The test's "host root" is this machine's /.
func TestHostRootRunnerChroots(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	a := newAPIServer(t)
	r, _ := a.runner(t, t.TempDir())
	dr, err := r.c.RunnerIn("cmp-1", kubeaccess.Pod{Node: "cmp-1", Namespace: "openstack", Name: podName, Container: DebugContainer, HostRoot: "/"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := dr.Run(context.Background(), "echo host; exit 2")
	if err != nil || res.ExitCode != 2 || string(res.Stdout) != "host\n" {
		t.Fatalf("exit %d, stdout %q, %v", res.ExitCode, res.Stdout, err)
	}
	testCancelKills(t, dr.(*Runner))
	cmds := a.commands()
	if len(cmds) < 3 {
		t.Fatalf("exec requests %q, want the command, the cancelled one and its kill", cmds)
	}
	wrapped, kills := 0, 0
	for i, c := range cmds {
		if len(c) != 3 || c[0] != "sh" || c[1] != "-c" {
			t.Errorf("exec command %q, want sh -c LINE", c)
			continue
		}
		chrooted := strings.Contains(c[2], "chroot / /bin/sh -c")
		if strings.Contains(c[2], "ASAP2E2E-PGID") { // a command in its wrapper
			wrapped++
			if !chrooted || strings.HasPrefix(c[2], "chroot") {
				t.Errorf("exec %d %q: want the wrapper in the container and the command under chroot", i, c[2])
			}
		} else { // a kill of the group
			kills++
			if chrooted {
				t.Errorf("exec %d %q: a kill runs in the container, not under chroot", i, c[2])
			}
		}
	}
	if wrapped != 2 || kills < 1 {
		t.Errorf("%d commands and %d kills, want 2 and at least 1: %q", wrapped, kills, cmds)
	}
}
