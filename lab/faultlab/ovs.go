package faultlab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KilledVswitchd is a hypervisor's ovs-vswitchd the matrix killed; Restart
// starts it again (once), and runs at the test's end anyway, so a failed row
// does not leave the lab without a switch.
type KilledVswitchd struct {
	env       *Env
	HV        Hypervisor
	PID       int
	At        time.Time // when SIGKILL was sent
	restarted bool
}

// KillVswitchd kills hypervisor hv's ovs-vswitchd with SIGKILL, as a crash
// would: no clean-up of its own, its pidfile and control socket left behind.
// The pid comes from lab/up.sh's pid file (VswitchdService), checked to be
// the lab's ovs-vswitchd; KillVswitchd returns once the process is gone
// (or a zombie: dead, not reaped yet). Nothing restarts it but Restart.
func (e *Env) KillVswitchd(t testing.TB, hv Hypervisor) *KilledVswitchd {
	t.Helper()
	pid, err := e.labPID(VswitchdService(hv), "ovs-vswitchd")
	if err != nil {
		t.Fatal(err)
	}
	k := &KilledVswitchd{env: e, HV: hv, PID: pid}
	t.Cleanup(func() { _ = k.Restart(t) })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL ovs-vswitchd %d of %s: %v", pid, hv.Name, err)
	}
	k.At = time.Now()
	deadline := k.At.Add(ExitAfterKill)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || ProcDead(string(stat)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd %d of %s still runs %s after SIGKILL", pid, hv.Name, ExitAfterKill)
		}
		time.Sleep(PollEvery)
	}
	t.Logf("%s: killed ovs-vswitchd of %s (pid %d, SIGKILL)", k.At.UTC().Format("15:04:05.000"), hv.Name, pid)
	return k
}

// ProcDead tells from a /proc/<pid>/stat line ("<pid> (<comm>) <state> …")
// whether the process has died: a zombie (Z) or dead (X).
func ProcDead(stat string) bool {
	hi := strings.LastIndexByte(stat, ')')
	if hi < 0 {
		return false
	}
	f := strings.Fields(stat[hi+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// Restart starts the killed ovs-vswitchd again (once) exactly as lab/up.sh
// started it, through the same script (lab/lib/ovs-vswitchd.sh restart N,
// which also records the new pid for lab/status.sh and lab/down.sh), then
// waits until the hypervisor works again (WaitVswitchdRecovered), so the
// rows after this one meet a whole lab. It tells whether the hypervisor
// recovered (false: the row failed, saying why); called again, it does
// nothing and returns true.
func (k *KilledVswitchd) Restart(t testing.TB) bool {
	t.Helper()
	if k.restarted {
		return true
	}
	k.restarted = true
	e := k.env
	cmd := exec.Command("bash", filepath.Join(e.Root, "lab", "lib", "ovs-vswitchd.sh"), "restart", k.HV.Number)
	cmd.Env = labScriptEnv(e.LabState)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("restarting ovs-vswitchd of %s (lab/lib/ovs-vswitchd.sh restart %s): %v: %s (the rows after this one will fail: bring the lab down and up)",
			k.HV.Name, k.HV.Number, err, strings.TrimSpace(string(out)))
		return false
	}
	t.Logf("%s: %s", time.Now().UTC().Format("15:04:05.000"), strings.TrimSpace(string(out)))
	if err := e.WaitVswitchdRecovered(k.HV, VswitchdRecovered); err != nil {
		t.Errorf("after restarting ovs-vswitchd of %s: %v (the rows after this one may fail)", k.HV.Name, err)
		return false
	}
	t.Logf("%s: %s recovered: ovs-vswitchd answers, its tunnels carry their controller's flows again", time.Now().UTC().Format("15:04:05.000"), k.HV.Name)
	return true
}

// labScriptEnv is this process's environment for a lab script: $LAB_STATE
// the matrix's lab, and the lab's own records (release, backend, computes,
// hypervisor domain: lab/lib/common.sh reads them from $LAB_STATE) not
// overridden by this process's settings.
func labScriptEnv(state string) []string {
	var out []string
	for _, kv := range cleanEnv() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "LAB_STATE", "LAB_RELEASE", "LAB_BACKEND", "LAB_COMPUTES", "LAB_HV_DOMAIN":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LAB_STATE="+state)
}

// WaitVswitchdRecovered waits, within timeout, until hypervisor hv works
// again after its ovs-vswitchd was restarted:
//
//   - ovs-vswitchd answers (`ovs-appctl version`) and `ovs-vsctl show`
//     answers;
//   - every tunnel interface (vxlan: the Neutron OVS agent's br-tun; geneve:
//     ovn-controller's br-int) has an OpenFlow port again and an ingress
//     flow (in_port=<its port>) in table 0 of its bridge. The bridges are
//     in fail mode secure: a new ovs-vswitchd starts them with no flow at
//     all, so these flows are there only once the backend's controller saw
//     the restart and programmed the hypervisor again — the OVS agent
//     re-creates its bridges' flows, syncs its tunnels and then re-plugs
//     every port it finds in the same loop, ovn-controller sends its whole
//     flow table at once. The row's own ports are gone by then (its run was
//     torn down), and the matrix's other rows wait (the row is serial): the
//     hypervisor is as the next row needs it.
func (e *Env) WaitVswitchdRecovered(hv Hypervisor, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		missing, err := e.vswitchdMissing(hv)
		if err == nil && len(missing) == 0 {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = "no ingress flow yet for " + strings.Join(missing, ", ")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not recovered within %s: %s", hv.Name, timeout, last)
		}
		time.Sleep(time.Second)
	}
}

// vswitchdMissing is what hypervisor hv still lacks (see
// WaitVswitchdRecovered): an error when a tool does not answer, else the
// tunnel interfaces without an OpenFlow port or an ingress flow.
func (e *Env) vswitchdMissing(hv Hypervisor) ([]string, error) {
	if out, err := e.HVExec(hv, "ovs-appctl", "--timeout=5", "version"); err != nil {
		return nil, fmt.Errorf("ovs-appctl version: %v: %s", err, Shorten(strings.TrimSpace(string(out)), 200))
	}
	if out, err := e.HVExec(hv, "ovs-vsctl", "--timeout=5", "show"); err != nil {
		return nil, fmt.Errorf("ovs-vsctl show: %v: %s", err, Shorten(strings.TrimSpace(string(out)), 200))
	}
	out, err := e.HVExec(hv, "ovs-vsctl", "--timeout=5", "-f", "csv", "--data=bare", "--no-headings", "--columns=name,type,ofport", "list", "Interface")
	if err != nil {
		return nil, fmt.Errorf("ovs-vsctl list Interface: %v: %s", err, Shorten(strings.TrimSpace(string(out)), 200))
	}
	ifaces, err := ParseInterfaces(string(out))
	if err != nil {
		return nil, err
	}
	var missing []string
	flows := map[string]map[int]bool{} // bridge → ports with an ingress flow
	tunnels := 0
	for _, in := range ifaces {
		if in.Type != "vxlan" && in.Type != "geneve" {
			continue
		}
		tunnels++
		if in.OFPort <= 0 {
			missing = append(missing, fmt.Sprintf("%s (no OpenFlow port yet: %d)", in.Name, in.OFPort))
			continue
		}
		br, err := e.HVExec(hv, "ovs-vsctl", "--timeout=5", "port-to-br", in.Name)
		if err != nil {
			return nil, fmt.Errorf("ovs-vsctl port-to-br %s: %v: %s", in.Name, err, strings.TrimSpace(string(br)))
		}
		bridge := strings.TrimSpace(string(br))
		if flows[bridge] == nil {
			dump, err := e.HVExec(hv, "ovs-ofctl", "-O", "OpenFlow13", "--no-names", "dump-flows", bridge, "table=0")
			if err != nil {
				return nil, fmt.Errorf("ovs-ofctl dump-flows %s table=0: %v: %s", bridge, err, Shorten(strings.TrimSpace(string(dump)), 200))
			}
			flows[bridge] = InPorts(string(dump))
		}
		if !flows[bridge][in.OFPort] {
			missing = append(missing, fmt.Sprintf("%s (port %d of %s)", in.Name, in.OFPort, bridge))
		}
	}
	if tunnels == 0 {
		return nil, fmt.Errorf("no vxlan or geneve interface in the database: not a lab hypervisor?")
	}
	return missing, nil
}

// Iface is one row of `ovs-vsctl -f csv --data=bare --no-headings
// --columns=name,type,ofport list Interface`:
//
//	vxlan-c612000c,vxlan,2
//	ul0,,1
//	br-int,internal,65534
//	tap1a2b3c4d-5e,,[]
//
// OFPort is 0 while ovs-vswitchd has not given the interface a port yet
// ([] or empty) and -1 when it could not open it.
type Iface struct {
	Name, Type string
	OFPort     int
}

// ParseInterfaces reads that listing; a line it cannot read is an error
// that quotes it.
func ParseInterfaces(out string) ([]Iface, error) {
	var ifaces []Iface
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("ovs-vsctl list Interface: line %q is not name,type,ofport", line)
		}
		in := Iface{Name: f[0], Type: f[1]}
		if p := strings.TrimSpace(f[2]); p != "" && p != "[]" {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, fmt.Errorf("ovs-vsctl list Interface: line %q: ofport %q is not a number", line, p)
			}
			in.OFPort = n
		}
		ifaces = append(ifaces, in)
	}
	return ifaces, nil
}

var inPortRe = regexp.MustCompile(`\bin_port=(\d+)\b`)

// InPorts is the set of OpenFlow ports that some flow of an `ovs-ofctl
// --no-names dump-flows` output matches as its in_port:
//
//	cookie=0x9c1e…, duration=12.3s, table=0, n_packets=0, n_bytes=0, priority=1,in_port=2 actions=goto_table:4
func InPorts(dump string) map[int]bool {
	ports := map[int]bool{}
	for _, line := range strings.Split(dump, "\n") {
		for _, m := range inPortRe.FindAllStringSubmatch(line, -1) {
			n, _ := strconv.Atoi(m[1])
			ports[n] = true
		}
	}
	return ports
}
