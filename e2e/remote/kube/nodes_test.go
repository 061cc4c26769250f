package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// Rockoon-shaped names: MOSK's nodes are kaas-node-<uuid>; Nova's service
// host is the node's name (rockoon/openstack_utils.py queries compute
// services with host=node.name; templates/services/compute.yaml keeps
// use_fqdn.compute false); the hypervisor name comes from libvirt and can
// carry the domain (rockoon's exporter strips it:
// exporter/collectors/openstack/nova.py).
const (
	nodeA = "kaas-node-5d6a1b0c-7e2f-4c3d-9a8b-1f2e3d4c5b6a"
	nodeB = "kaas-node-8f9e0d1c-2b3a-4c5d-8e7f-6a5b4c3d2e1f"
	nodeC = "kaas-node-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)

func node(name, hostname string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelHostname: hostname}}}
}

func TestResolveMOSKNames(t *testing.T) {
	pending := func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "openvswitch-vswitchd",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}
	}
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	base := []runtime.Object{
		ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA),
		ovsPod("openvswitch-vswitchd-default-7hq4m", nodeB),
		node(nodeA, nodeA), node(nodeB, nodeB),
	}
	cases := []struct {
		name      string
		objs      []runtime.Object
		override  map[string]string
		target    kubeaccess.Target
		wantPod   string
		wantNode  string
		wantHow   string
		wantErr   []string
		forbidden bool // the nodes may not be listed
	}{
		{name: "FQDN hypervisor, service host is the node", objs: base,
			target:  kubeaccess.Target{Hypervisor: nodeA + ".mosk.example.net", ServiceHost: nodeA},
			wantPod: "openvswitch-vswitchd-default-2xk9p", wantNode: nodeA, wantHow: "service host"},
		{name: "service host wins over a hypervisor name that is another node", objs: base,
			target:  kubeaccess.Target{Hypervisor: nodeB, ServiceHost: nodeA},
			wantPod: "openvswitch-vswitchd-default-2xk9p", wantNode: nodeA, wantHow: "service host"},
		{name: "no service host (read back without it): the hypervisor name", objs: base,
			target:  kubeaccess.Target{Hypervisor: nodeB},
			wantPod: "openvswitch-vswitchd-default-7hq4m", wantNode: nodeB, wantHow: "hypervisor name"},
		{name: "no service host, FQDN hypervisor: its short name", objs: base,
			target:  kubeaccess.Target{Hypervisor: strings.ToUpper(nodeB[:4]) + nodeB[4:] + ".cluster.local"},
			wantPod: "openvswitch-vswitchd-default-7hq4m", wantNode: nodeB, wantHow: "short hypervisor name"},
		{name: "node named otherwise, its kubernetes.io/hostname label matches",
			objs:    []runtime.Object{ovsPod("openvswitch-vswitchd-default-q8w2e", nodeC), node(nodeC, "cmp-007"), node(nodeA, nodeA)},
			target:  kubeaccess.Target{Hypervisor: "cmp-007.mosk.example.net", ServiceHost: "cmp-007.mosk.example.net"},
			wantPod: "openvswitch-vswitchd-default-q8w2e", wantNode: nodeC, wantHow: "kubernetes.io/hostname label"},
		{name: "node_names overrides a name that would match", objs: base, override: map[string]string{nodeA + ".mosk.example.net": nodeB},
			target:  kubeaccess.Target{Hypervisor: nodeA + ".mosk.example.net", ServiceHost: nodeA},
			wantPod: "openvswitch-vswitchd-default-7hq4m", wantNode: nodeB, wantHow: "hypervisors.kubernetes.node_names"},
		{name: "rolling update: the old pod terminating, its replacement Pending",
			objs: []runtime.Object{
				ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA, terminating),
				ovsPod("openvswitch-vswitchd-default-5rt8z", nodeA, pending),
				ovsPod("openvswitch-vswitchd-default-7hq4m", nodeB)},
			target: kubeaccess.Target{Hypervisor: nodeA + ".mosk.example.net", ServiceHost: nodeA},
			wantErr: []string{"→ node " + nodeA + " (service host)", "no Running OVS pod",
				"found openvswitch-vswitchd-default-2xk9p (Running, terminating), openvswitch-vswitchd-default-5rt8z (Pending)"}},
		{name: "rolling update: the replacement Running beside the terminating pod",
			objs: []runtime.Object{
				ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA, terminating),
				ovsPod("openvswitch-vswitchd-default-5rt8z", nodeA)},
			target:  kubeaccess.Target{Hypervisor: nodeA + ".mosk.example.net", ServiceHost: nodeA},
			wantPod: "openvswitch-vswitchd-default-5rt8z", wantNode: nodeA, wantHow: "service host"},
		{name: "nothing matches: the nodes with OVS pods are listed", objs: base,
			target: kubeaccess.Target{Hypervisor: "cmp-9.example.net", ServiceHost: "cmp-9"},
			wantErr: []string{"hypervisor cmp-9.example.net (service host cmp-9): no Kubernetes node matches",
				"tried cmp-9, cmp-9.example.net as node names and kubernetes.io/hostname labels",
				`the nodes that run an OVS pod (namespace openstack, selector "application=openvswitch,component=openvswitch-vswitchd"): ` + nodeA + ", " + nodeB,
				"hypervisors.kubernetes.node_names.cmp-9.example.net: <node>"}},
		{name: "nothing matches and the nodes may not be listed", objs: base, forbidden: true,
			target: kubeaccess.Target{Hypervisor: "cmp-9"},
			wantErr: []string{"no Kubernetes node matches (tried cmp-9 as node names; the kubernetes.io/hostname labels could not be read",
				`nodes is forbidden: User "system:serviceaccount:asap2:harness" cannot list resource "nodes"`, nodeA + ", " + nodeB}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset(c.objs...)
			if c.forbidden {
				cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "",
						errors.New(`User "system:serviceaccount:asap2:harness" cannot list resource "nodes" in API group "" at the cluster scope`))
				})
			}
			k := mosk
			k.NodeNames = c.override
			cl := clusterFor(cs, k, kubeaccess.Options{})
			pod, m, err := cl.Resolve(context.Background(), c.target)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("want an error, got %+v by %+v", pod, m)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\ndoes not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pod.Name != c.wantPod || pod.Node != c.wantNode || m.Node != c.wantNode || m.How != c.wantHow {
				t.Errorf("got pod %s on %s by %q, want %s on %s by %q", pod.Name, pod.Node, m.How, c.wantPod, c.wantNode, c.wantHow)
			}
		})
	}
}

// The pure mapping: a label never outranks a node name, and among nodes
// whose label matches, the one running OVS is chosen.
func TestMatchNode(t *testing.T) {
	tg := kubeaccess.Target{Hypervisor: "cmp-1.example.net", ServiceHost: "cmp-1"}
	if m, ok := MatchNode(tg, nil, []string{"cmp-1"}, map[string]string{"other": "cmp-1"}); !ok || m.Node != "cmp-1" || m.How != "service host" {
		t.Errorf("node name must win over a label: %+v %v", m, ok)
	}
	if m, ok := MatchNode(tg, nil, []string{"b"}, map[string]string{"a": "cmp-1", "b": "CMP-1"}); !ok || m.Node != "b" {
		t.Errorf("the labelled node with OVS must win: %+v %v", m, ok)
	}
	if m, ok := MatchNode(tg, map[string]string{"cmp-1": "x"}, []string{"cmp-1"}, nil); !ok || m.Node != "x" {
		t.Errorf("node_names keyed by the service host: %+v %v", m, ok)
	}
	if m, ok := MatchNode(tg, nil, []string{"cmp-10"}, nil); ok {
		t.Errorf("cmp-10 is not cmp-1: %+v", m)
	}
	if m, ok := MatchNode(kubeaccess.Target{}, nil, []string{""}, map[string]string{"a": ""}); ok {
		t.Errorf("an empty target matches nothing: %+v", m)
	}
}
