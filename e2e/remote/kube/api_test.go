package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// An API server that accepts the connection and never answers (the issue's
// "held a run silently for 100 s+"): every call of the package fails at
// intervals.kube_api, named, not at the caller's context.
func TestEveryAPICallIsBoundedOnAHungAPIServer(t *testing.T) {
	var requests atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select { // never answers
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	api := config.Interval{Timeout: 300 * time.Millisecond, Poll: 50 * time.Millisecond}
	c, err := newCluster(&rest.Config{Host: srv.URL}, mosk, kubeaccess.Options{API: api})
	if err != nil {
		t.Fatal(err)
	}
	debug := debugInput(&stack{})
	debug.Interval = config.Interval{Timeout: time.Hour, Poll: time.Second}
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"FindPod", func(ctx context.Context) error { _, err := c.FindPod(ctx, "cmp-1"); return err }},
		{"Resolve", func(ctx context.Context) error {
			_, _, err := c.Resolve(ctx, kubeaccess.Target{Hypervisor: "cmp-1"})
			return err
		}},
		{"Preflight", func(ctx context.Context) error {
			return c.Preflight(ctx, kubeaccess.PreflightInput{Hypervisors: []kubeaccess.Target{{Hypervisor: "cmp-1"}}}).Err()
		}},
		{"CreateDebugPod", func(ctx context.Context) error { _, err := c.CreateDebugPod(ctx, debug); return err }},
		{"DeletePod", func(ctx context.Context) error { return c.DeletePod(ctx, podName, debug.Interval) }},
		{"SweepDebugPods", func(ctx context.Context) error {
			_, err := c.SweepDebugPods(ctx, kubeaccess.SweepInput{Prefix: "asap2e2e", All: true})
			return err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			// The caller's context is the suite's: far longer than the bound.
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- tc.call(ctx) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "no answer within 300ms (intervals.kube_api") {
					t.Errorf("error %v, want one naming intervals.kube_api", err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("took %s", d)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s still waiting on a hung API server after 10s", tc.name)
			}
		})
	}
	if requests.Load() == 0 {
		t.Error("no request reached the server")
	}
}
