package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// rbacServer is client-go's fake clientset answering as an API server with
// RBAC and admission would: SelfSubjectAccessReviews from a grant list
// (the reasons are the RBAC authorizer's wording), and pod creates with
// DryRun All run admission and store nothing.
type rbacServer struct {
	*fake.Clientset
	granted  []string // "verb resource[/sub]"
	admitErr error    // admission's refusal of a pod create; nil = admitted
	dryRuns  int
	reviews  []string
}

func newRBACServer(granted []string, objs ...runtime.Object) *rbacServer {
	s := &rbacServer{Clientset: fake.NewClientset(objs...), granted: granted}
	s.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ssar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ra := ssar.Spec.ResourceAttributes
		key := ra.Verb + " " + ra.Resource
		if ra.Subresource != "" {
			key += "/" + ra.Subresource
		}
		s.reviews = append(s.reviews, key+" in "+ra.Namespace)
		if slices.Contains(s.granted, key) {
			ssar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true,
				Reason: `RBAC: allowed by RoleBinding "asap2-e2e/openstack" of Role "asap2-e2e" to User "release-engineer"`}
		}
		return true, ssar, nil
	})
	s.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateActionImpl)
		if !slices.Equal(ca.GetCreateOptions().DryRun, []string{metav1.DryRunAll}) {
			return false, nil, nil
		}
		s.dryRuns++
		if s.admitErr != nil {
			return true, nil, s.admitErr
		}
		return true, ca.GetObject(), nil
	})
	return s
}

var allAccess = []string{"list pods", "create pods/exec", "get pods/exec", "create pods", "get pods", "delete pods", "list events"}

// psaRefusal is PodSecurity admission's answer to a privileged,
// host-network pod in a namespace enforcing baseline (the wording of
// k8s.io/pod-security-admission's admission.go and its baseline checks).
func psaRefusal(name string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
		fmt.Errorf(`violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), privileged (container "debug" must not set securityContext.privileged=true)`))
}

func preflightInput(hvs ...kubeaccess.Target) kubeaccess.PreflightInput {
	in := debugInput(nil)
	in.Name = "asap2e2e-preflight-debug"
	in.Node = ""
	return kubeaccess.PreflightInput{Hypervisors: hvs, DebugPod: &in}
}

func problems(r kubeaccess.PreflightReport) []string {
	var out []string
	for _, c := range r.Checks {
		if c.Problem != "" {
			out = append(out, c.Problem)
		}
	}
	return out
}

func TestPreflightPasses(t *testing.T) {
	s := newRBACServer(allAccess, ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA), ovsPod("openvswitch-vswitchd-default-7hq4m", nodeB))
	c := clusterFor(s, mosk, kubeaccess.Options{})
	r := c.Preflight(context.Background(), preflightInput(kubeaccess.Target{Hypervisor: nodeA + ".mosk.example.net"}, kubeaccess.Target{Hypervisor: nodeB}))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.Checks) != 7+1+2+1 {
		t.Errorf("%d checks, want 11: %+v", len(r.Checks), r.Checks)
	}
	want := []string{"list pods in openstack", "create pods/exec in openstack", "get pods/exec in openstack",
		"create pods in openstack", "get pods in openstack", "delete pods in openstack", "list events in openstack"}
	if !slices.Equal(s.reviews, want) {
		t.Errorf("reviews %q, want %q", s.reviews, want)
	}
	if s.dryRuns != 1 {
		t.Errorf("%d dry-run creates, want 1", s.dryRuns)
	}
	// The OVS pods found, one per node: where the tools probe runs.
	if len(r.Pods) != 2 || r.Pods[0].Node != nodeA || r.Pods[1].Node != nodeB || r.Pods[0].Name != "openvswitch-vswitchd-default-2xk9p" {
		t.Errorf("pods %+v", r.Pods)
	}
	if last := r.Checks[len(r.Checks)-1].What; !strings.Contains(last, "on node "+nodeA) {
		t.Errorf("the dry run goes to the first hypervisor's node: %q", last)
	}
	// A dry run stores nothing.
	pods, _ := s.CoreV1().Pods("openstack").List(context.Background(), metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleNodeDebug})
	if len(pods.Items) != 0 {
		t.Errorf("the dry run left %d pods", len(pods.Items))
	}
	// Without a debug image, only the OVS pods' access is reviewed.
	s.reviews = nil
	r = c.Preflight(context.Background(), kubeaccess.PreflightInput{})
	if err := r.Err(); err != nil || len(s.reviews) != 3 || s.dryRuns != 1 {
		t.Errorf("no debug pod: err %v, reviews %q, dry runs %d", err, s.reviews, s.dryRuns)
	}
}

// Every problem at once, each with what to change.
func TestPreflightListsEveryProblem(t *testing.T) {
	granted := slices.DeleteFunc(slices.Clone(allAccess), func(s string) bool { return s == "create pods/exec" || s == "list events" })
	wrongContainer := ovsPod("openvswitch-vswitchd-default-7hq4m", nodeB, func(p *corev1.Pod) { p.Spec.Containers = []corev1.Container{{Name: "vswitchd"}} })
	s := newRBACServer(granted, ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA), wrongContainer, node(nodeA, nodeA), node(nodeB, nodeB))
	s.admitErr = psaRefusal("asap2e2e-preflight-debug")
	c := clusterFor(s, mosk, kubeaccess.Options{})
	c.source = "kubeconfig /home/re/.kube/mosk.yaml, context mosk-admin@mosk (user oidc-re)"
	r := c.Preflight(context.Background(), preflightInput(kubeaccess.Target{Hypervisor: "cmp-9.mosk.example.net"}, kubeaccess.Target{Hypervisor: nodeA}))
	got := problems(r)
	want := [][]string{
		{"kubeconfig /home/re/.kube/mosk.yaml, context mosk-admin@mosk (user oidc-re) may not create pods/exec in namespace openstack", "docs/kubernetes-rbac.yaml"},
		{"may not list events in namespace openstack", "saying why a node debug pod does not run"},
		{"1 of 2 OVS pods have no container openvswitch-vswitchd: openvswitch-vswitchd-default-7hq4m (node " + nodeB + "); their containers: vswitchd", "hypervisors.kubernetes.container"},
		{"hypervisor cmp-9.mosk.example.net: no Kubernetes node matches", nodeA + ", " + nodeB, "hypervisors.kubernetes.node_names.cmp-9.mosk.example.net"},
		{`pods "asap2e2e-preflight-debug" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`, "on node " + nodeA, "namespace openstack", "hypervisors.kubernetes.debug_image",
			// MKE 3 grants per user or service account, MKE 4 also exempts namespaces.
			"on MKE 3, which has no namespace exemption", "user or service account the privileged attributes privileged and hostNetwork (a selective grant",
			"api.ucpauthz.exemptNamespace"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, ws := range want {
		for _, w := range ws {
			if !strings.Contains(got[i], w) {
				t.Errorf("problem %d %q\ndoes not say %q", i, got[i], w)
			}
		}
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "5 problem(s)") || !strings.Contains(err.Error(), "mosk-admin@mosk") {
		t.Errorf("Err: %v", err)
	}
}

// Credentials the API server refuses stop the preflight at the first
// call, named, and nothing else is tried.
func TestPreflightRefusedCredentials(t *testing.T) {
	s := newRBACServer(allAccess, ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA))
	s.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewUnauthorized("Unauthorized")
	})
	c := clusterFor(s, mosk, kubeaccess.Options{})
	c.source = "kubeconfig /home/re/.kube/mosk.yaml, context mosk"
	r := c.Preflight(context.Background(), preflightInput(kubeaccess.Target{Hypervisor: nodeA}))
	got := problems(r)
	if len(got) != 1 || len(r.Checks) != 1 || !strings.Contains(got[0], "Unauthorized") || !strings.Contains(got[0], "credentials of kubeconfig /home/re/.kube/mosk.yaml, context mosk") ||
		!strings.Contains(got[0], "hypervisors.kubernetes.kubeconfig") {
		t.Errorf("got %q", got)
	}
	if s.dryRuns != 0 {
		t.Errorf("a dry run after refused credentials")
	}
}

// An OVN cloud (MOSK 25.1+) under the ovs preset finds no OVS pod and says
// which preset fits.
func TestPreflightOVNCloudUnderOVSPreset(t *testing.T) {
	// The pod as charts/infra/openvswitch's daemonset-ovn-controller.yaml
	// makes it: containers vswitchd, db, controller.
	ovn := ovsPod("ovn-controller-default-4kd8s", nodeA, func(p *corev1.Pod) {
		p.Labels = map[string]string{"application": "openvswitch_ovn", "component": "controller"}
		p.Spec.Containers = []corev1.Container{{Name: "vswitchd"}, {Name: "db"}, {Name: "controller"}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "vswitchd", Ready: true}, {Name: "db", Ready: true}, {Name: "controller", Ready: true}}
	})
	s := newRBACServer(allAccess, ovn)
	r := clusterFor(s, mosk, kubeaccess.Options{}).Preflight(context.Background(), preflightInput(kubeaccess.Target{Hypervisor: nodeA}))
	got := problems(r)
	if len(got) < 1 || !strings.Contains(got[0], `no pod in namespace openstack matches selector "application=openvswitch,component=openvswitch-vswitchd"`) ||
		!strings.Contains(got[0], "preset: ovn") {
		t.Errorf("got %q", got)
	}
	// Under the ovn preset the same cloud passes.
	p := config.KubePresets[config.KubePresetOVN]
	k := config.Kubernetes{Namespace: "openstack", Preset: config.KubePresetOVN, PodSelector: p.PodSelector, Container: p.Container}
	r = clusterFor(s, k, kubeaccess.Options{}).Preflight(context.Background(), preflightInput(kubeaccess.Target{Hypervisor: nodeA}))
	if err := r.Err(); err != nil {
		t.Error(err)
	}
	if what := r.Checks[len(r.Checks)-2].What; !strings.Contains(what, "pod openstack/ovn-controller-default-4kd8s, container vswitchd") {
		t.Errorf("hypervisor check %q", what)
	}
}

// With debug_namespace the debug pods, their access reviews (exec too) and
// the dry run go to that namespace; the OVS pods stay where they are.
func TestDebugNamespace(t *testing.T) {
	s := newRBACServer(allAccess, ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA))
	var dryNS string
	s.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if slices.Equal(a.(k8stesting.CreateActionImpl).GetCreateOptions().DryRun, []string{metav1.DryRunAll}) {
			dryNS = a.GetNamespace()
		}
		return false, nil, nil
	})
	onCreate(s.Clientset, running())
	k := mosk
	k.DebugNamespace = "asap2-debug"
	c := clusterFor(s, k, kubeaccess.Options{})
	if err := c.Preflight(context.Background(), preflightInput(kubeaccess.Target{Hypervisor: nodeA})).Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"list pods in openstack", "create pods/exec in openstack", "get pods/exec in openstack",
		"create pods in asap2-debug", "get pods in asap2-debug", "delete pods in asap2-debug", "list events in asap2-debug",
		"create pods/exec in asap2-debug", "get pods/exec in asap2-debug"}
	if !slices.Equal(s.reviews, want) || dryNS != "asap2-debug" {
		t.Errorf("reviews %q (want %q), dry run in %q", s.reviews, want, dryNS)
	}
	var cl stack
	pod, err := c.CreateDebugPod(context.Background(), debugInput(&cl))
	if err != nil || pod.Namespace != "asap2-debug" {
		t.Fatalf("pod %+v, %v", pod, err)
	}
	swept, err := c.SweepDebugPods(context.Background(), kubeaccess.SweepInput{Prefix: "asap2e2e", RunID: runID})
	if err != nil || len(swept) != 1 || swept[0].ID != "asap2-debug/"+podName {
		t.Errorf("swept %+v, %v", swept, err)
	}
	cl.run(t)
	if _, err := s.CoreV1().Pods("asap2-debug").Get(context.Background(), podName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after teardown: %v", err)
	}
}
