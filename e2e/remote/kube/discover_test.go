package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

var mosk = config.Kubernetes{Namespace: "openstack", PodSelector: config.DefaultKubePodSelector, Container: config.DefaultKubeContainer}

// ovsPod is an OVS DaemonSet pod as MOSK runs it (labels of Rockoon's
// openvswitch chart), Running with its vswitchd container ready.
func ovsPod(name, node string, edit ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack",
			Labels: map[string]string{"application": "openvswitch", "component": "openvswitch-vswitchd"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "openvswitch-vswitchd"}, {Name: "openvswitch-vswitchd-init-done"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "openvswitch-vswitchd", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	for _, e := range edit {
		e(p)
	}
	return p
}

func TestFindPod(t *testing.T) {
	other := ovsPod("openvswitch-vswitchd-default-zzzzz", "cmp-2") // on another node
	// A vswitchd pod in another namespace, and a pod on the node that the
	// selector does not match.
	elsewhere := ovsPod("openvswitch-vswitchd-x", "cmp-1", func(p *corev1.Pod) { p.Namespace = "kube-system" })
	unlabelled := ovsPod("neutron-ovs-agent-default-aaaaa", "cmp-1", func(p *corev1.Pod) { p.Labels = map[string]string{"application": "neutron"} })
	cases := []struct {
		name    string
		objs    []runtime.Object
		want    string // pod name, or "" for an error
		wantErr []string
	}{
		{"the good case", []runtime.Object{ovsPod("openvswitch-vswitchd-default-abcde", "cmp-1"), other, elsewhere, unlabelled},
			"openvswitch-vswitchd-default-abcde", nil},
		{"missing pod", []runtime.Object{other, elsewhere, unlabelled}, "",
			[]string{"no OVS pod found", "node cmp-1", `selector "application=openvswitch,component=openvswitch-vswitchd"`, "namespace openstack", "node_names"}},
		{"two pods", []runtime.Object{ovsPod("ovs-a", "cmp-1"), ovsPod("ovs-b", "cmp-1"), other}, "",
			[]string{"2 Running OVS pods", "node cmp-1", "expected one: ovs-a (Running), ovs-b (Running)"}},
		{"a terminating pod beside the new one", []runtime.Object{
			ovsPod("ovs-old", "cmp-1", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), ovsPod("ovs-new", "cmp-1")},
			"ovs-new", nil},
		{"pending", []runtime.Object{ovsPod("ovs-a", "cmp-1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })}, "",
			[]string{"no Running OVS pod", "node cmp-1", "found ovs-a (Pending)"}},
		{"not ready", []runtime.Object{ovsPod("ovs-a", "cmp-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		})}, "", []string{"container openvswitch-vswitchd of pod openstack/ovs-a", "node cmp-1", "is not ready (waiting: CrashLoopBackOff)"}},
		{"wrong container", []runtime.Object{ovsPod("ovs-a", "cmp-1", func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "vswitchd"}}
		})}, "", []string{"pod openstack/ovs-a", "node cmp-1", "has no container openvswitch-vswitchd; its containers: vswitchd"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := clusterFor(fake.NewClientset(c.objs...), mosk, kubeaccess.Options{})
			pod, err := cl.FindPod(context.Background(), "cmp-1")
			if c.want != "" {
				if err != nil {
					t.Fatal(err)
				}
				want := kubeaccess.Pod{Node: "cmp-1", Namespace: "openstack", Name: c.want, Container: "openvswitch-vswitchd"}
				if pod != want {
					t.Errorf("got %+v, want %+v", pod, want)
				}
				if got := cl.runnerFor("cmp-1.mosk", pod).Name(); got != "hypervisor cmp-1.mosk (pod openstack/"+c.want+", container openvswitch-vswitchd)" {
					t.Errorf("runner name %q", got)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error, got pod %+v", pod)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestNewClusterNamesTheKubeconfig(t *testing.T) {
	_, err := NewCluster(config.Kubernetes{Kubeconfig: "/nonexistent/kubeconfig", Context: "mosk"}, kubeaccess.Options{})
	if err == nil || !strings.Contains(err.Error(), "kubeconfig /nonexistent/kubeconfig, context mosk") {
		t.Fatalf("got %v", err)
	}
}
