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
	At      time.Time // when it was stopped
	Until   time.Time // when Resume continued it
	resumed bool
}

// The names of lab services in lab/up.sh's pid files ($LAB_STATE/run/pids/
// NAME.pid, from its `start NAME ...`): the same on both backends (ovs, ovn)
// and both releases (zed, epoxy); TestUpShPidNames reads lab/up.sh for them.
const (
	ServiceNeutronServer = "neutron-server"
	ServiceNovaAPI       = "nova-api"
)

// NovaComputeHost is the service host of hypervisor hv's nova-compute
// (lab/lib/common.sh hv_host: compute<number>), also the name of its pid
// file.
func NovaComputeHost(hv Hypervisor) string { return "compute" + hv.Number }

// VswitchdService is the pid file name of hypervisor hv's ovs-vswitchd
// (lab/lib/ovs-vswitchd.sh: hv<number>-ovs-vswitchd).
func VswitchdService(hv Hypervisor) string { return "hv" + hv.Number + "-ovs-vswitchd" }

// labPID is the pid in lab/up.sh's pid file of service name
// ($LAB_STATE/run/pids/<name>.pid), checked to lead a process group of the
// lab that runs program (labProcess): a stale pid file must not make the
// matrix signal somebody else's process.
func (e *Env) labPID(name, program string) (int, error) {
	pidFile := filepath.Join(e.LabState, "run", "pids", name+".pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("%s: %w (is the lab up?)", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("%s: pid %q in %s", name, strings.TrimSpace(string(b)), pidFile)
	}
	if err := labProcess(pid, e.LabState, program); err != nil {
		return 0, fmt.Errorf("%s (pid file %s): %w", name, pidFile, err)
	}
	return pid, nil
}

// FreezeService stops lab service name (its pid file's name, see labPID)
// as a host that hangs would: its process group, checked to be the lab's
// and to run program, is sent SIGSTOP. Every process of the group stops
// (neutron-server's API and RPC workers, nova-api's workers); the kernel
// still accepts connections on its sockets, which nobody answers. The group
// is continued when the test ends in any case.
func (e *Env) FreezeService(t testing.TB, name, program string) *FrozenService {
	t.Helper()
	pid, err := e.labPID(name, program)
	if err != nil {
		t.Fatal(err)
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

// FreezeNovaCompute stops the nova-compute of hypervisor hv
// (FreezeService of nova-compute-<host>).
func (e *Env) FreezeNovaCompute(t testing.TB, hv Hypervisor) *FrozenService {
	t.Helper()
	return e.FreezeService(t, "nova-compute-"+NovaComputeHost(hv), "nova-compute")
}

// Resume continues the stopped process group (once).
func (fs *FrozenService) Resume(t testing.TB) {
	if fs.resumed {
		return
	}
	fs.resumed = true
	fs.Until = time.Now()
	if err := syscall.Kill(-fs.PGID, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
		t.Errorf("SIGCONT process group %d (%s): %v", fs.PGID, fs.Name, err)
		return
	}
	t.Logf("%s: continued %s (process group %d)", fs.Until.UTC().Format("15:04:05.000"), fs.Name, fs.PGID)
}

// labProcess checks that pid is a process of the lab at state whose group
// runs program (in its command line): a stale pid file must not make the
// matrix stop somebody else's process.
func labProcess(pid int, state, program string) error {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !IsLabProc(env, cmdline, state) {
		return fmt.Errorf("pid %d is not a lab process of %s (no ASAP2LAB_PROC=%s in its environment, no %s/ in its command line)", pid, state, state, state)
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

// IsLabProc is lab/lib/common.sh's is_lab_pid (and lib/labprocs.py's rule)
// over a process's /proc/<pid>/environ and cmdline (NUL-separated): its
// environment carries ASAP2LAB_PROC=<state>, or its command line names a
// path under <state>/ (neutron-server's setproctitle overwrites its
// environment block, not the configuration paths in its title).
func IsLabProc(environ, cmdline []byte, state string) bool {
	if bytes.Contains(append([]byte{0}, environ...), []byte("\x00ASAP2LAB_PROC="+state+"\x00")) {
		return true
	}
	return bytes.Contains(cmdline, []byte(state+"/"))
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
