package kube

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/lateness"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// ovsPodOn is a Running OVS pod of rockoon's labels on node, its container
// ready.
func ovsPodOn(name, uid, node string) corev1.Pod {
	return corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack", UID: types.UID(uid), Labels: map[string]string{"application": "openvswitch", "component": "openvswitch-vswitchd"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "openvswitch-vswitchd", Image: "ovs:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "openvswitch-vswitchd", Ready: true}}},
	}
}

// logLines is a kubeaccess.Options.Logf that keeps its lines, and an
// Options.Replaced that keeps the moves it is told of.
type logLines struct {
	mu    sync.Mutex
	lines []string
	moves []kubeaccess.PodReplacement
}

func (l *logLines) replaced(m kubeaccess.PodReplacement) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.moves = append(l.moves, m)
}

func (l *logLines) replacements() []kubeaccess.PodReplacement {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]kubeaccess.PodReplacement(nil), l.moves...)
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// hvRunner is the runner of hypervisor hv-1 (service host cmp-1) as the
// harness gets it: its node and OVS pod found through the API server.
func (a *apiServer) hvRunner(t *testing.T, dir string, logs *logLines) *Runner {
	t.Helper()
	log, err := remote.OpenCommandLog(filepath.Join(dir, "commands.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
	rc := &rest.Config{Host: a.srv.URL, BearerToken: testToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	c, err := newCluster(rc, mosk, kubeaccess.Options{Log: log, KillGrace: 500 * time.Millisecond, Logf: logs.logf, Replaced: logs.replaced})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(klogReset)
	pr, _, err := c.Runner(context.Background(), kubeaccess.Target{Hypervisor: "hv-1", ServiceHost: "cmp-1"})
	if err != nil {
		t.Fatal(err)
	}
	return pr.(*Runner)
}

// The OVS pod of cmp-1 is deleted and the DaemonSet's replacement runs
// there between two commands: the command that finds it gone fails naming
// the pod that vanished, its node and namespace and the replacement; the
// run's log says the runner moved, and Options.Replaced is told of the
// move once, before the command returns; the next command runs in the new
// pod.
func TestPodReplacedBetweenCommands(t *testing.T) {
	const oldPod, newPod = "openvswitch-vswitchd-default-aaaaa", "openvswitch-vswitchd-default-bbbbb"
	a := newAPIServer(t)
	a.setPods(ovsPodOn(oldPod, "uid-1", "cmp-1"), ovsPodOn("openvswitch-vswitchd-default-zzzzz", "uid-9", "cmp-2"))
	var logs logLines
	dir := t.TempDir()
	r := a.hvRunner(t, dir, &logs)
	ctx := context.Background()
	if res, err := r.Run(ctx, "echo one"); err != nil || string(res.Stdout) != "one\n" {
		t.Fatalf("first command: %q, %v", res.Stdout, err)
	}

	if m := logs.replacements(); len(m) != 0 {
		t.Fatalf("moves told before any pod vanished: %+v", m)
	}
	a.setPods(ovsPodOn(newPod, "uid-2", "cmp-1"), ovsPodOn("openvswitch-vswitchd-default-zzzzz", "uid-9", "cmp-2"))
	before := time.Now()
	res, err := r.Run(ctx, "echo two")
	after := time.Now()
	var gone *kubeaccess.PodGoneError
	if !errors.As(err, &gone) {
		t.Fatalf("second command: exit %d, %v; want a PodGoneError", res.ExitCode, err)
	}
	if gone.Old.Name != oldPod || gone.New == nil || gone.New.Name != newPod || gone.New.UID != "uid-2" || gone.How != "NotFound" {
		t.Errorf("PodGoneError old %+v, new %+v, how %q; want %s gone (NotFound), %s (uid-2) its replacement", gone.Old, gone.New, gone.How, oldPod, newPod)
	}
	for _, want := range []string{"pod openstack/" + oldPod + " on node cmp-1 vanished", "replaced by pod openstack/" + newPod, a.srv.URL, "not run again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if want := "pod openstack/" + oldPod + " on node cmp-1 was replaced by pod openstack/" + newPod; !strings.Contains(logs.String(), want) {
		t.Errorf("the run's log lacks %q:\n%s", want, logs.String())
	}

	moves := logs.replacements()
	if len(moves) != 1 {
		t.Fatalf("Options.Replaced was told %d moves, want 1: %+v", len(moves), moves)
	}
	if m := moves[0]; m.Hypervisor != "hv-1" || m.Old.Name != oldPod || m.Old.UID != "uid-1" || m.Old.Node != "cmp-1" ||
		m.New.Name != newPod || m.New.UID != "uid-2" || m.New.Namespace != "openstack" || m.How != "NotFound" ||
		m.At.Before(before) || m.At.After(after) {
		t.Errorf("move told %+v; want hv-1 from %s (uid-1, cmp-1) to openstack/%s (uid-2), NotFound, between %s and %s", m, oldPod, newPod, before, after)
	}

	res, err = r.Run(ctx, "echo three")
	if err != nil || string(res.Stdout) != "three\n" {
		t.Fatalf("third command: %q, %v", res.Stdout, err)
	}
	if m := logs.replacements(); len(m) != 1 {
		t.Errorf("a command in the replacement told another move: %+v", m)
	}
	if !strings.Contains(res.Target, newPod) || r.Pod().Name != newPod {
		t.Errorf("third command ran as %q (runner's pod %s), want in %s", res.Target, r.Pod().Name, newPod)
	}
	a.mu.Lock()
	pods := strings.Join(a.execPods, ",")
	a.mu.Unlock()
	if pods != oldPod+","+newPod {
		t.Errorf("exec requests went to %s; want the first to %s, the third to %s (the second was refused)", pods, oldPod, newPod)
	}
	data, err := os.ReadFile(filepath.Join(dir, "commands.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "vanished") {
		t.Errorf("the command log does not record the vanished pod:\n%s", data)
	}
}

// Commands started together in a pod that vanished each fail naming it (a
// late one may start in the replacement already, and pass), and the move
// to the replacement is told once.
func TestPodReplacedUnderConcurrentCommands(t *testing.T) {
	const oldPod, newPod = "openvswitch-vswitchd-default-aaaaa", "openvswitch-vswitchd-default-bbbbb"
	a := newAPIServer(t)
	a.setPods(ovsPodOn(oldPod, "uid-1", "cmp-1"))
	var logs logLines
	r := a.hvRunner(t, t.TempDir(), &logs)
	a.setPods(ovsPodOn(newPod, "uid-2", "cmp-1"))
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := r.Run(context.Background(), "true")
			errs <- err
		}()
	}
	failed := 0
	for range n {
		err := <-errs
		if err == nil {
			continue
		}
		failed++
		var gone *kubeaccess.PodGoneError
		if !errors.As(err, &gone) || gone.Old.Name != oldPod || gone.New == nil || gone.New.Name != newPod {
			t.Errorf("got %v; want a PodGoneError from %s to %s", err, oldPod, newPod)
		}
	}
	if failed == 0 {
		t.Error("no command found the pod gone")
	}
	if m := logs.replacements(); len(m) != 1 || m[0].Old.Name != oldPod || m[0].New.Name != newPod {
		t.Errorf("moves told %+v; want one, from %s to %s", m, oldPod, newPod)
	}
	if r.Pod().Name != newPod {
		t.Errorf("runner in %s, want %s", r.Pod().Name, newPod)
	}
}

// The pod is deleted under a running command: its container's processes
// are killed (here: KILL to the command's process group, as the runtime
// does to a container), the exec reports the shell's exit 137, and the
// pod's replacement already runs. That is not the command's exit status:
// the error names the vanished pod and the replacement.
func TestPodDeletedUnderACommand(t *testing.T) {
	const oldPod, newPod = "openvswitch-vswitchd-default-aaaaa", "openvswitch-vswitchd-default-bbbbb"
	a := newAPIServer(t)
	a.setPods(ovsPodOn(oldPod, "uid-1", "cmp-1"))
	var logs logLines
	r := a.hvRunner(t, t.TempDir(), &logs)
	pidFile := filepath.Join(t.TempDir(), "pgid")
	done := make(chan error, 1)
	var res remote.Result
	go func() {
		var err error
		res, err = r.Run(context.Background(), "echo $$ > "+pidFile+"; sleep 30")
		done <- err
	}()
	var pgid int
	for deadline := time.Now().Add(10 * time.Second); pgid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(pidFile)
		pgid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if pgid == 0 {
		t.Fatal("the command did not start")
	}
	a.setPods(ovsPodOn(newPod, "uid-2", "cmp-1"))
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var gone *kubeaccess.PodGoneError
		if !errors.As(err, &gone) || gone.Old.Name != oldPod || gone.New == nil || gone.New.Name != newPod {
			t.Fatalf("exit %d, %v; want a PodGoneError naming %s and its replacement %s", res.ExitCode, err, oldPod, newPod)
		}
		if res.ExitCode != -1 {
			t.Errorf("exit %d, want -1 (the command's own status never came)", res.ExitCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the pod's processes were killed")
	}
}

// No replacement yet (the DaemonSet's new pod still Pending): the error
// says so with what the lookup found, the runner stays, and the next
// command looks again and moves.
func TestPodGoneWithoutReplacement(t *testing.T) {
	const oldPod, newPod = "openvswitch-vswitchd-default-aaaaa", "openvswitch-vswitchd-default-bbbbb"
	a := newAPIServer(t)
	a.setPods(ovsPodOn(oldPod, "uid-1", "cmp-1"))
	var logs logLines
	r := a.hvRunner(t, t.TempDir(), &logs)
	ctx := context.Background()
	pending := ovsPodOn(newPod, "uid-2", "cmp-1")
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}
	a.setPods(pending)
	_, err := r.Run(ctx, "true")
	var gone *kubeaccess.PodGoneError
	if !errors.As(err, &gone) || gone.New != nil || gone.NoNew == nil {
		t.Fatalf("got %v; want a PodGoneError without a replacement", err)
	}
	if !strings.Contains(err.Error(), "no replacement runs there yet") || !strings.Contains(err.Error(), newPod+" (Pending)") {
		t.Errorf("error does not say that the replacement is not running:\n%v", err)
	}
	if r.Pod().Name != oldPod {
		t.Errorf("runner moved to %s without a Running replacement", r.Pod().Name)
	}
	if m := logs.replacements(); len(m) != 0 {
		t.Errorf("a move was told without a replacement: %+v", m)
	}
	a.setPods(ovsPodOn(newPod, "uid-2", "cmp-1"))
	if _, err := r.Run(ctx, "true"); !errors.As(err, &gone) || gone.New == nil || gone.New.Name != newPod {
		t.Fatalf("second try: %v; want the replacement found", err)
	}
	if res, err := r.Run(ctx, "echo ok"); err != nil || string(res.Stdout) != "ok\n" {
		t.Fatalf("in the replacement: %q, %v", res.Stdout, err)
	}
	if m := logs.replacements(); len(m) != 1 || m[0].Old.Name != oldPod || m[0].New.Name != newPod {
		t.Errorf("moves told %+v; want the one from %s to %s", m, oldPod, newPod)
	}
}

// The API server goes away (its listener and every connection closed, as
// when kube-apiserver is stopped) between two commands and under a running
// one: each fails within its bound, naming the API server's URL, the pod
// and its node (hv-1's node is cmp-1: the hypervisor's name alone would not
// say it).
func TestAPIServerStoppedMidRun(t *testing.T) {
	for _, mid := range []bool{false, true} {
		t.Run(map[bool]string{false: "between commands", true: "under a command"}[mid], func(t *testing.T) {
			a := newAPIServer(t)
			a.setPods(ovsPodOn("openvswitch-vswitchd-default-aaaaa", "uid-1", "cmp-1"))
			var logs logLines
			r := a.hvRunner(t, t.TempDir(), &logs)
			const bound = 3 * time.Second
			b := remote.Bounded(r, bound, "intervals.command")
			ctx := context.Background()
			// The first command must pass: its bound is not the one under
			// test (a starved go test -race took over 3 s for an exec
			// through the in-process API server).
			if res, err := remote.Bounded(r, time.Minute, "the first command's").Run(ctx, "echo one"); err != nil || string(res.Stdout) != "one\n" {
				t.Fatalf("first command: %q, %v", res.Stdout, err)
			}
			cmd := "echo two"
			if mid {
				cmd = "echo started; sleep 20"
				go func() {
					time.Sleep(700 * time.Millisecond)
					a.kill()
				}()
			} else {
				a.kill()
			}
			start, canary := time.Now(), lateness.Start()
			_, err := b.Run(ctx, cmd)
			took, late := time.Since(start), canary.Stop()
			if err == nil {
				t.Fatalf("the command passed with the API server gone (after %s)", took)
			}
			// The bound, and the kill's grace periods after it at most,
			// each of them as late as this process's timers were.
			if took > bound+4*r.c.grace+late {
				t.Errorf("failed after %s; the bound is %s, the kill grace %s, the timers were %s late", took, bound, r.c.grace, late)
			}
			for _, want := range []string{"API server " + a.srv.URL, "pod openstack/openvswitch-vswitchd-default-aaaaa on node cmp-1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// client-go's own log (an "Unhandled Error" report among it) goes to the
// run's log given in the options, not to the process's stderr.
func TestClientLogGoesToTheRunsLog(t *testing.T) {
	var logs logLines
	if _, err := newCluster(&rest.Config{Host: "https://127.0.0.1:1"}, mosk, kubeaccess.Options{Logf: logs.logf}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(klogReset)
	utilruntime.HandleError(errors.New("Copying stdin failed: io: read/write on closed pipe"))
	if got := logs.String(); !strings.Contains(got, "client-go:") || !strings.Contains(got, "Copying stdin failed") {
		t.Errorf("the run's log got %q; want client-go's report", got)
	}
}

// klogReset sends client-go's log back to stderr after a test that routed it.
func klogReset() { setClientLogSink(nil) }

// An API server that takes the exec's connection and never answers: the
// command fails at its bound plus the kill's grace periods, and the error
// names the bound and the API server.
func TestExecOnAHungAPIServerFailsAtItsBound(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c, err := newCluster(&rest.Config{Host: srv.URL}, mosk, kubeaccess.Options{KillGrace: 300 * time.Millisecond,
		API: config.Interval{Timeout: 300 * time.Millisecond, Poll: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	r := c.runnerFor("hv-1", kubeaccess.Pod{Node: "cmp-1", Namespace: "openstack", Name: "openvswitch-vswitchd-default-aaaaa", Container: "openvswitch-vswitchd"})
	const bound = time.Second
	start, canary := time.Now(), lateness.Start()
	_, err = remote.Bounded(r, bound, "intervals.command").Run(context.Background(), "true")
	took, late := time.Since(start), canary.Stop()
	var be *remote.BoundError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a BoundError", err)
	}
	t.Logf("after %s (the timers %s late): %v", took, late, err)
	// The bound and the kill's grace periods (1.9 s on a quiet machine),
	// each of them as late as this process's timers were: a starved
	// go test -race took 2.78 s.
	if took > bound+4*c.grace+late {
		t.Errorf("failed after %s; bound %s, kill grace %s, the timers %s late", took, bound, c.grace, late)
	}
	for _, want := range []string{"within 1s (intervals.command)", "API server " + srv.URL, "pod openstack/openvswitch-vswitchd-default-aaaaa on node cmp-1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
