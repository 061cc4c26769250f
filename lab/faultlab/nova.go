package faultlab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FrozenService is a lab service whose process group the matrix stopped
// (SIGSTOP); Resume continues it, once, and runs at the test's end anyway.
type FrozenService struct {
	Name    string // the lab's name of it, e.g. nova-compute-compute2
	PGID    int
	At      time.Time
	resumed bool
}

// NovaComputeHost is the service host of hypervisor hv's nova-compute
// (lab/lib/common.sh hv_host: compute<number>), also the name of its pid
// file.
func NovaComputeHost(hv Hypervisor) string { return "compute" + hv.Number }

// FreezeNovaCompute stops the nova-compute of hypervisor hv as a host that
// hangs would: its process group from lab/up.sh's pid file
// ($LAB_STATE/run/pids/nova-compute-<host>.pid), checked to be the lab's
// (lab/up.sh puts ASAP2LAB_PROC=$LAB_STATE in each service's environment)
// and to run nova-compute, is sent SIGSTOP. The group is continued when the
// test ends in any case.
func (e *Env) FreezeNovaCompute(t testing.TB, hv Hypervisor) *FrozenService {
	t.Helper()
	name := "nova-compute-" + NovaComputeHost(hv)
	pidFile := filepath.Join(e.LabState, "run", "pids", name+".pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("%s: %v (is the lab up?)", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("%s: pid %q in %s", name, strings.TrimSpace(string(b)), pidFile)
	}
	if err := labProcess(pid, e.LabState, "nova-compute"); err != nil {
		t.Fatalf("%s (pid file %s): %v", name, pidFile, err)
	}
	fs := &FrozenService{Name: name, PGID: pid}
	t.Cleanup(func() { fs.Resume(t) })
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP process group %d (%s): %v", pid, name, err)
	}
	fs.At = time.Now()
	t.Logf("%s: stopped %s (process group %d)", fs.At.UTC().Format("15:04:05.000"), name, pid)
	return fs
}

// Resume continues the stopped process group (once).
func (fs *FrozenService) Resume(t testing.TB) {
	if fs.resumed {
		return
	}
	fs.resumed = true
	if err := syscall.Kill(-fs.PGID, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
		t.Errorf("SIGCONT process group %d (%s): %v", fs.PGID, fs.Name, err)
		return
	}
	t.Logf("continued %s (process group %d)", fs.Name, fs.PGID)
}

// labProcess checks that pid is a process of the lab at state whose group
// runs program (in its command line): a stale pid file must not make the
// matrix stop somebody else's process.
func labProcess(pid int, state, program string) error {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	if !bytes.Contains(append([]byte{0}, env...), []byte("\x00ASAP2LAB_PROC="+state+"\x00")) {
		return fmt.Errorf("pid %d is not a lab process of %s (no ASAP2LAB_PROC=%s in its environment)", pid, state, state)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return fmt.Errorf("pid %d does not lead its process group (group %d, %v)", pid, pgid, err)
	}
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		p, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(p); err != nil || g != pid {
			continue
		}
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if bytes.Contains(cl, []byte(program)) {
			return nil
		}
	}
	return fmt.Errorf("process group %d runs no %s", pid, program)
}

// WaitServiceUp waits until Nova lists binary on host up (openstack
// compute service list, the admin's), polling every 2 s within timeout.
func (e *Env) WaitServiceUp(ctx context.Context, binary, host string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		out, err := e.OpenStack(ctx, e.Admin, "compute service list --service "+binary+" --host "+host+" -f value -c State")
		last = strings.TrimSpace(string(out))
		if err != nil {
			last = err.Error()
		}
		if err == nil && last == "up" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s on %s not up in Nova's service list within %s (last: %q)", binary, host, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
