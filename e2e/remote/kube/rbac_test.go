package kube

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// rbacManifest is the Role/ClusterRole manifest the docs give release
// engineers.
const rbacManifest = "../../../docs/kubernetes-rbac.yaml"

// grants reports whether rules allow verb on resource in the core group.
func grants(rules []rbacv1.PolicyRule, verb, resource string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// The manifest grants every permission the preflight reviews (a run with a
// debug pod), what the sweeper does (list, get, delete pods), and list on
// nodes for the kubernetes.io/hostname step; and nothing beyond them in
// the namespace.
func TestRBACManifestGrantsWhatTheRunNeeds(t *testing.T) {
	data, err := os.ReadFile(rbacManifest)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var role, clusterRole []rbacv1.PolicyRule
	kinds := map[string]int{}
	for {
		var obj struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
			Rules             []rbacv1.PolicyRule `json:"rules"`
		}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if obj.Kind == "" {
			continue
		}
		kinds[obj.Kind]++
		switch obj.Kind {
		case "Role":
			if obj.Namespace != "openstack" {
				t.Errorf("Role in namespace %q, want openstack (hypervisors.kubernetes.namespace's default)", obj.Namespace)
			}
			role = append(role, obj.Rules...)
		case "ClusterRole":
			clusterRole = append(clusterRole, obj.Rules...)
		}
	}
	for _, k := range []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
		if kinds[k] != 1 {
			t.Errorf("%d %s, want 1", kinds[k], k)
		}
	}
	needed := RequiredAccess(true)
	// tools/sweeper and the leak check: SweepDebugPods lists, DeletePod
	// deletes and reads until gone.
	needed = append(needed, Access{Verb: "list", Resource: "pods"}, Access{Verb: "delete", Resource: "pods"}, Access{Verb: "get", Resource: "pods"})
	granted := 0
	for _, a := range needed {
		res := a.Resource
		if a.Subresource != "" {
			res += "/" + a.Subresource
		}
		if !grants(role, a.Verb, res) {
			t.Errorf("the Role does not grant %s (%s)", a, a.Why)
		}
	}
	for _, r := range role {
		granted += len(r.Resources) * len(r.Verbs)
	}
	if granted != 7 {
		t.Errorf("the Role grants %d verb-resource pairs, want the 7 the run needs", granted)
	}
	if !grants(clusterRole, "list", "nodes") || len(clusterRole) != 1 {
		t.Errorf("the ClusterRole must grant list on nodes and nothing else: %+v", clusterRole)
	}
}
