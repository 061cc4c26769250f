package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// explain is the error of a command in pod whose exec ended without an
// exit status (err). One read of the pod (bounded by intervals.kube_api
// and the command's context, not tried again: the command has failed
// already) tells a pod that vanished — NotFound, being deleted, or another
// UID under the same name — from an API server that does not answer and
// from a pod that is still there. A vanished OVS pod's replacement is
// looked up by the selector and node, and the runner moves to it, telling
// the run's log and kubeaccess.Options.Replaced.
func (r *Runner) explain(ctx context.Context, pod kubeaccess.Pod, err error) error {
	via := r.c.via(pod)
	gctx, cancel := r.c.apiCall(ctx)
	p, gerr := r.c.client.CoreV1().Pods(pod.Namespace).Get(gctx, pod.Name, metav1.GetOptions{})
	cancel()
	how := ""
	switch {
	case apierrors.IsNotFound(gerr):
		how = "NotFound"
	case gerr != nil:
		return fmt.Errorf("%s: %w; reading the pod back failed too: %v", via, err, r.c.apiError("reading pod "+pod.Namespace+"/"+pod.Name, gerr))
	case pod.UID != "" && string(p.UID) != pod.UID:
		how = fmt.Sprintf("created again under the same name, uid %s → %s", pod.UID, p.UID)
	case p.DeletionTimestamp != nil:
		how = "being deleted"
	default:
		return fmt.Errorf("%s: %w", via, err)
	}
	gone := &kubeaccess.PodGoneError{Hypervisor: r.hv, Old: pod, How: how, Server: r.c.server(), Err: err}
	if !r.follow {
		gone.NoNew = errors.New("a debug pod is not replaced")
		return gone
	}
	if cur, _ := r.current(); cur != pod {
		// Another command found the replacement first.
		gone.New = &cur
		return gone
	}
	next, ferr := r.c.FindPod(ctx, pod.Node)
	if ferr != nil {
		gone.NoNew = ferr
		return gone
	}
	gone.New = &next
	r.moveMu.Lock()
	defer r.moveMu.Unlock()
	r.mu.Lock()
	moved := r.pod == pod
	if moved {
		r.pod, r.name = next, runnerName(r.hv, next)
	}
	r.mu.Unlock()
	if !moved {
		return gone
	}
	if r.c.logf != nil {
		r.c.logf("kubernetes: pod %s/%s on node %s was replaced by pod %s/%s (%s); the later commands of hypervisor %s run there",
			pod.Namespace, pod.Name, pod.Node, next.Namespace, next.Name, how, r.hv)
	}
	if r.c.replaced != nil {
		r.c.replaced(kubeaccess.PodReplacement{Hypervisor: r.hv, Old: pod, New: next, How: how, At: time.Now()})
	}
	return gone
}

// unreachable: err says the API server was not reached, or did not answer
// in time.
func unreachable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || utilnet.IsConnectionRefused(err) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// routeClientLog sends what client-go logs through klog (its "Unhandled
// Error" reports among them: a stream's copy that failed, a watch that
// broke) to logf, the run's log, instead of the process's stderr, where it
// landed amid the suite's output. klog's logger is the process's: the last
// cluster opened with a log wins. klog's own SetLogger is not safe beside
// goroutines that log (an earlier cluster's streams), so it is called once,
// with a logger that reads the current sink (clientLogSink) on each line.
func routeClientLog(logf func(format string, args ...any)) {
	setClientLogSink(logf)
}

// clientLogSink is where routeClientLog's logger writes; nil: stderr, as
// klog would.
var (
	clientLogSink atomic.Pointer[func(format string, args ...any)]
	clientLogOnce sync.Once
)

// setClientLogSink makes logf (nil: stderr) the sink of client-go's log,
// installing the forwarding logger the first time.
func setClientLogSink(logf func(format string, args ...any)) {
	if logf == nil {
		clientLogSink.Store(nil)
	} else {
		clientLogSink.Store(&logf)
	}
	clientLogOnce.Do(func() {
		klog.SetLogger(funcr.New(func(prefix, args string) {
			line := args
			if prefix != "" {
				line = prefix + " " + args
			}
			if f := clientLogSink.Load(); f != nil {
				(*f)("client-go: %s", line)
				return
			}
			fmt.Fprintf(os.Stderr, "client-go: %s\n", line)
		}, funcr.Options{}))
	})
}
