package faultlab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HVExec runs a command inside a lab hypervisor (lab/lib/hv-exec).
func (e *Env) HVExec(hv Hypervisor, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), HVExecTimeout)
	defer cancel()
	argv := append(append([]string{hv.Number}, e.CommandPrefix...), args...)
	cmd := exec.CommandContext(ctx, filepath.Join(e.Root, "lab", "lib", "hv-exec"), argv...)
	return cmd.CombinedOutput()
}

// FlowSet is OpenFlow rules of one row (one cookie) in the integration
// bridge of every lab hypervisor.
type FlowSet struct {
	env     *Env
	cookie  string
	removed bool
}

// AddFlows adds each match+actions in table 0 of the integration bridge on
// every hypervisor, above all of Neutron's flows, with the row's cookie;
// they are removed when the test ends in any case.
func (e *Env) AddFlows(t testing.TB, cookie string, rules ...string) *FlowSet {
	t.Helper()
	fs := &FlowSet{env: e, cookie: cookie}
	t.Cleanup(func() { fs.Remove(t) })
	for _, hv := range e.Hypervisors {
		for _, rule := range rules {
			flow := fmt.Sprintf("cookie=%s,table=0,priority=65535,%s", cookie, rule)
			if out, err := e.HVExec(hv, "ovs-ofctl", "-O", "OpenFlow13", "add-flow", e.Bridge, flow); err != nil {
				t.Fatalf("%s: ovs-ofctl add-flow %s %q: %v: %s", hv.Name, e.Bridge, flow, err, out)
			}
		}
	}
	t.Logf("%s of every hypervisor: %q (cookie %s)", e.Bridge, rules, cookie)
	return fs
}

// Remove deletes the set's flows from every hypervisor (once).
func (fs *FlowSet) Remove(t testing.TB) {
	t.Helper()
	if fs.removed {
		return
	}
	fs.removed = true
	e := fs.env
	for _, hv := range e.Hypervisors {
		if out, err := e.HVExec(hv, "ovs-ofctl", "-O", "OpenFlow13", "del-flows", e.Bridge, "cookie="+fs.cookie+"/-1"); err != nil {
			t.Errorf("%s: ovs-ofctl del-flows %s cookie=%s/-1: %v: %s", hv.Name, e.Bridge, fs.cookie, err, out)
		}
	}
	t.Logf("flows of cookie %s removed", fs.cookie)
}

// GateCookie is the OpenFlow cookie of GatePort's rule for port.
func GateCookie(port int) string { return fmt.Sprintf("0x%x", 0xfa0000+port) }

// GatePort makes every hypervisor's integration bridge drop every TCP
// segment to port (an OpenFlow rule above all of Neutron's, with a cookie of
// its own, GateCookie) until Lift; the rule is removed when the test ends in
// any case.
func (e *Env) GatePort(t testing.TB, port int) *FlowSet {
	t.Helper()
	g := e.AddFlows(t, GateCookie(port), fmt.Sprintf("tcp,tp_dst=%d,actions=drop", port))
	t.Logf("%s of every hypervisor drops TCP to port %d", e.Bridge, port)
	return g
}

// Lift removes a gate (Remove, named for what it does to the row).
func (fs *FlowSet) Lift(t testing.TB) {
	t.Helper()
	fs.Remove(t)
	t.Logf("gate on port cookie %s lifted", fs.cookie)
}

// FrozenSSH is a run's SSH connections to one hypervisor, their sshd
// processes stopped with SIGSTOP.
type FrozenSSH struct {
	PIDs    []int
	At      time.Time
	resumed bool
}

// FreezeHypervisorSSH stops the sshd processes that serve this harness's
// connections to hypervisor name (as in topology.json): the harness's own
// sockets to the hypervisor's SSH address (`ss -tnp` here, by the harness's
// pid) give the local ports; inside the hypervisor's namespace, the sshd
// processes holding port 22 sockets with those peer ports are this run's,
// and only they are stopped. The listener and other runs' sessions go on.
// They are continued when the test ends in any case.
func (r *Run) FreezeHypervisorSSH(t testing.TB, name string) *FrozenSSH {
	t.Helper()
	hv, err := r.env.Hypervisor(name)
	if err != nil {
		t.Fatal(err)
	}
	root, err := exec.Command("ss", "-tnp", "state", "established").Output()
	if err != nil {
		t.Fatalf("ss -tnp: %v", err)
	}
	inHV, err := exec.Command("ip", "netns", "exec", hv.Netns, "ss", "-tnp", "state", "established").Output()
	if err != nil {
		t.Fatalf("ip netns exec %s ss -tnp: %v", hv.Netns, err)
	}
	_ = os.WriteFile(filepath.Join(r.Dir, "ss-root.txt"), root, 0o644)
	_ = os.WriteFile(filepath.Join(r.Dir, "ss-"+hv.Netns+".txt"), inHV, 0o644)
	pids, conns := SSHDServing(string(root), string(inHV), r.cmd.Process.Pid, hv.Address)
	if len(pids) == 0 {
		t.Fatalf("no sshd in %s serves the harness (pid %d) at %s:22; ss outputs in %s", hv.Netns, r.cmd.Process.Pid, hv.Address, r.Dir)
	}
	fr := &FrozenSSH{}
	t.Cleanup(func() { fr.Resume(t) })
	for _, pid := range pids {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cl), "[listener]") || strings.Contains(string(cl), " -D") {
			t.Fatalf("pid %d is the sshd listener (%q): refusing to stop it", pid, cl)
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP sshd %d: %v", pid, err)
		}
		fr.PIDs = append(fr.PIDs, pid)
	}
	fr.At = time.Now()
	t.Logf("%s: stopped sshd %v in %s serving the harness's connections %v", fr.At.UTC().Format("15:04:05.000"), fr.PIDs, hv.Netns, conns)
	return fr
}

// Resume continues the stopped sshd processes (once).
func (fr *FrozenSSH) Resume(t testing.TB) {
	if fr.resumed {
		return
	}
	fr.resumed = true
	for _, pid := range fr.PIDs {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
			t.Errorf("SIGCONT sshd %d: %v", pid, err)
		}
	}
	if len(fr.PIDs) > 0 {
		t.Logf("continued sshd %v", fr.PIDs)
	}
}
