package offload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Every command line the harness runs on a hypervisor, from the builders
// that make it, and the tool it is routed by. The last four are the
// environment record's (e2e/harness CollectEnvironment: uname -r,
// ovs-vsctl --version, tc -V, ethtool -i).
func TestToolOfEveryHypervisorCommand(t *testing.T) {
	cases := []struct {
		cmd, tool string
		host      bool
	}{
		{TCCommand("rep1"), "tc", true},
		{TCTextCommand("vxlan_sys_4790"), "tc", true},
		{QdiscCommand("rep1"), "tc", true},
		{CaptureCommand("rep1", "ether host fa:16:3e:00:00:01", 5*time.Second, 1000), "tcpdump", true},
		{CaptureCommand("rep1", "udp", 2500*time.Millisecond, 10), "tcpdump", true},
		{LinkStatsCommand("rep1"), "ip", true},
		{CPUHitStatsCommand("rep1"), "ip", true},
		{LinkCommand("vxlan_sys_4790"), "ip", true},
		{FindInterfaceCommand("5d1c0f6e-0000-4000-8000-000000000001"), "ovs-vsctl", false},
		{CmdVXLANTunnels, "ovs-vsctl", false},
		{CmdBridgeDatapaths, "ovs-vsctl", false},
		{cmdDpctlOffloaded, "ovs-appctl", false},
		{cmdDpctlAll, "ovs-appctl", false},
		{"uname -r", "uname", false},
		{"ovs-vsctl --version", "ovs-vsctl", false},
		{"tc -V", "tc", true},
		{"ethtool -i rep1", "ethtool", true},
		// The wrappers ToolOf looks through.
		{"timeout -k 1s -s INT 5s tcpdump -i x", "tcpdump", true},
		{"sudo -n tcpdump -i x", "tcpdump", true},
		{"timeout 5 ip -j link", "ip", true},
		// Words that only begin like a tool.
		{"tcx show", "tcx", false},
		{"ipcalc 1.2.3.4", "ipcalc", false},
		{"", "", false},
		{"timeout -s", "", false},
	}
	for _, c := range cases {
		if got := ToolOf(c.cmd); got != c.tool {
			t.Errorf("ToolOf(%q) = %q, want %q", c.cmd, got, c.tool)
		}
		if got := IsHostToolCommand(c.cmd); got != c.host {
			t.Errorf("IsHostToolCommand(%q) = %v, want %v", c.cmd, got, c.host)
		}
		if c.host && IsOVSCommand(c.cmd) {
			t.Errorf("%q is both a host tool and an OVS command", c.cmd)
		}
	}
}

func TestParseTools(t *testing.T) {
	got, err := ParseTools([]byte("ip\ntc\n\n"))
	if err != nil || !reflect.DeepEqual(got, []string{"tc", "ip"}) {
		t.Errorf("got %v, %v; want [tc ip] in HostTools order", got, err)
	}
	if m := MissingTools(got); !reflect.DeepEqual(m, []string{"tcpdump", "ethtool"}) {
		t.Errorf("MissingTools = %v", m)
	}
	if got, err := ParseTools(nil); err != nil || len(got) != 0 {
		t.Errorf("empty probe: %v, %v", got, err)
	}
	if _, err := ParseTools([]byte("tc\n/usr/sbin/ip\n")); err == nil || !strings.Contains(err.Error(), `"/usr/sbin/ip" is not one of tc, tcpdump, ethtool, ip`) {
		t.Errorf("a path instead of a name: %v", err)
	}
	if !strings.Contains(ToolsProbeCommand, "for t in tc tcpdump ethtool ip;") {
		t.Errorf("probe %q does not probe HostTools", ToolsProbeCommand)
	}
}

// The probe really prints what is found: run it in sh with a PATH holding
// only stand-ins for tc and ip.
func TestToolsProbeInARealShell(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"tc", "ip"} {
		writeExec(t, dir, n)
	}
	out := runSh(t, "PATH="+dir+"; "+ToolsProbeCommand)
	got, err := ParseTools(out)
	if err != nil || !reflect.DeepEqual(got, []string{"tc", "ip"}) {
		t.Errorf("probe printed %q: %v, %v", out, got, err)
	}
}

// The checks, run through WithHostTools, send tc and ip to the host runner
// and every OVS command to the OVS container; with no tool missing the OVS
// runner itself is returned.
func TestHostToolsThroughRealChecks(t *testing.T) {
	qdisc := ok([]byte("qdisc ingress ffff: parent ffff:fff1 ----------------\n"))
	ovs := &fakeRunner{results: map[string][]remote.Result{
		CmdVXLANTunnels:    {ok(readTestdata(t, "ovs/vxlan-tunnels-4790.json"))},
		CmdBridgeDatapaths: {ok(readTestdata(t, "ovs/bridges-system.json"))},
		cmdDpctlOffloaded:  {ok(nil)},
		cmdDpctlAll:        {ok(readTestdata(t, "sw/dpctl-tcp-all-1.txt")), ok(readTestdata(t, "sw/dpctl-tcp-all-2.txt"))},
	}}
	host := &fakeRunner{results: map[string][]remote.Result{
		LinkCommand("vxlan_sys_4790"):  {ok(readTestdata(t, "ovs/ip-link-vxlan_sys_4790.json"))},
		QdiscCommand("vxlan_sys_4790"): {qdisc},
		QdiscCommand("rep1"):           {qdisc},
		TCCommand("rep1"):              {ok([]byte("[]\n"))},
		TCCommand("vxlan_sys_4790"):    {ok([]byte("[]\n"))},
	}}
	if r := WithHostTools(ovs, host, nil); r != remote.Runner(ovs) {
		t.Errorf("no tool missing: got %T, want the OVS runner itself", r)
	}
	if r := WithHostTools(ovs, nil, []string{"tc"}); r != remote.Runner(ovs) {
		t.Errorf("no host runner: got %T, want the OVS runner itself", r)
	}
	hv := WithHostTools(ovs, host, []string{"tc", "ip"})
	if hv.Name() != "fake-hv" {
		t.Errorf("Name %q, want the OVS runner's", hv.Name())
	}
	ctx := context.Background()
	f, err := DiscoverVXLAN(ctx, hv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Devices, []string{"vxlan_sys_4790"}) {
		t.Fatalf("discovery: %+v", f)
	}
	tc, err := CheckTC(ctx, hv, TCInput{Devices: []string{"rep1"}, MACs: []string{recMAC1, recMAC2}, Samples: 2, Decap: &f})
	if err != nil {
		t.Fatal(err)
	}
	if tc.Verdict != results.VerdictSoftware {
		t.Errorf("tc: %s %q (a host runner that missed a command would make it inconclusive)", tc.Verdict, tc.Reason)
	}
	dp, err := CheckDpctl(ctx, hv, DpctlInput{MACs: []string{recMAC1, recMAC2}, Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if dp.Verdict == results.VerdictInconclusive {
		t.Errorf("dpctl: %s %q", dp.Verdict, dp.Reason)
	}
	for _, c := range ovs.calls {
		if IsHostToolCommand(c) {
			t.Errorf("host tool %q ran in the OVS container", c)
		}
	}
	for _, c := range host.calls {
		if !IsHostToolCommand(c) {
			t.Errorf("%q ran on the host runner", c)
		}
	}
	if len(ovs.calls) == 0 || len(host.calls) == 0 {
		t.Errorf("calls: ovs %v, host %v", ovs.calls, host.calls)
	}
	// tcpdump and ethtool are not in onHost: found in the OVS container.
	if _, err := hv.Run(ctx, "ethtool -i rep1"); err != nil {
		t.Fatal(err)
	}
	if last := ovs.calls[len(ovs.calls)-1]; last != "ethtool -i rep1" {
		t.Errorf("ethtool (found in the OVS container) ran elsewhere; last OVS call %q", last)
	}
}

func writeExec(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func runSh(t *testing.T, line string) []byte {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out, err := exec.Command(sh, "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return out
}
