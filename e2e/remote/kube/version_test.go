package kube

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// The server's version is discovery's gitVersion; the Cluster is a
// kubeaccess.Versioned, which is how the harness asks it.
func TestServerVersion(t *testing.T) {
	cs := fake.NewClientset()
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: "1", Minor: "29", GitVersion: "v1.29.4"}
	var c kubeaccess.Cluster = NewClusterForClient(cs, mosk, kubeaccess.Options{})
	vc, ok := c.(kubeaccess.Versioned)
	if !ok {
		t.Fatal("kube.Cluster is not a kubeaccess.Versioned")
	}
	v, err := vc.ServerVersion(context.Background())
	if err != nil || v != "v1.29.4" {
		t.Errorf("ServerVersion = %q, %v", v, err)
	}
}
