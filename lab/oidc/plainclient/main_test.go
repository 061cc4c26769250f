package main

import (
	"strings"
	"testing"
	"time"
)

func TestListPodsNamesTheFailure(t *testing.T) {
	_, err := listPods("/nonexistent/kubeconfig", "openstack", time.Second)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Errorf("listPods with no kubeconfig: %v, want an error naming the file", err)
	}
}
