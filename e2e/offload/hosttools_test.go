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
		{CmdTunnels, "ovs-vsctl", false},
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

// ParseTools on recorded probe outputs (testdata/tools/README.md): every
// capability there; nothing on the PATH; an iproute2 without `ip stats`.
func TestParseTools(t *testing.T) {
	for _, tc := range []struct {
		file    string
		found   []string
		lacking map[string]string
	}{
		{"tools/probe-debian12.txt", HostTools, map[string]string{}},
		{"tools/probe-empty-path.txt", nil, map[string]string{
			"tc":      "tc is not installed (exit 127: /tmp/i20d-probe.sh: 1: tc: not found)",
			"tcpdump": "tcpdump is not installed (exit 127: /tmp/i20d-probe.sh: 1: tcpdump: not found)",
			"ethtool": "ethtool is not installed (exit 127: /tmp/i20d-probe.sh: 1: ethtool: not found)",
			"ip":      "ip is not installed (exit 127: /tmp/i20d-probe.sh: 1: ip: not found)",
		}},
		{"tools/probe-iproute2-5.5-no-stats.txt", []string{"tc", "tcpdump", "ethtool"}, map[string]string{
			"ip": "ip utility, iproute2-ss200127 has no `ip stats` (iproute2 5.18 or later), which the counters check reads the cpu_hit counters with: " +
				`Object "stats" is unknown, try "ip help".`,
		}},
	} {
		got, err := ParseTools(readTestdata(t, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if !reflect.DeepEqual(got.Found, tc.found) || !reflect.DeepEqual(got.Lacking, tc.lacking) {
			t.Errorf("%s: found %q, lacking %q\nwant %q, %q", tc.file, got.Found, got.Lacking, tc.found, tc.lacking)
		}
		if !reflect.DeepEqual(got.Missing(), MissingTools(tc.found)) {
			t.Errorf("%s: Missing %q", tc.file, got.Missing())
		}
	}
}

// tcpdump without a usable timeout is lacking, named so: the capture runs
// under `timeout -s INT`. An old BusyBox timeout wants -t.
func TestParseToolsTimeout(t *testing.T) {
	data := strings.Replace(string(readTestdata(t, "tools/probe-debian12.txt")), "asap2e2e-probe timeout 0 ",
		"asap2e2e-probe timeout 1 timeout: invalid number 'INT'", 1)
	got, err := ParseTools([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := "`timeout -s INT 5 true` exited 1: timeout: invalid number 'INT'; the representor capture runs tcpdump under timeout -s INT"
	if got.Lacking["tcpdump"] != want || !reflect.DeepEqual(got.Found, []string{"tc", "ethtool", "ip"}) {
		t.Errorf("found %q, lacking %q; want tcpdump lacking %q", got.Found, got.Lacking, want)
	}
	if w := got.Why([]string{"tcpdump", "tc"}); w != "tcpdump ("+want+"), tc" {
		t.Errorf("Why = %q", w)
	}
}

// Every bad line at once, each named; a probe that printed nothing is
// missing.
func TestParseToolsBadOutput(t *testing.T) {
	data := "asap2e2e-probe tc 0 tc utility\n/usr/sbin/ip\nasap2e2e-probe tc 0 again\nasap2e2e-probe nft 0 x\nasap2e2e-probe ip x y\nasap2e2e-probe ethtool 00 x\n"
	_, err := ParseTools([]byte(data))
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{`line 2: "/usr/sbin/ip" is not a probe record`, "line 3: probe tc reported twice", `line 4: unknown probe "nft"`,
		`line 5: probe ip: exit status "x" is not 0-255`, `line 6: probe ethtool: exit status "00" is not 0-255`, "no record of probe tcpdump", "no record of probe setsid"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, err := ParseTools(nil); err == nil || !strings.Contains(err.Error(), "no record of probe tc") {
		t.Errorf("empty output: %v", err)
	}
}

// The probe really runs what it says: in sh, with a PATH of stand-ins — an
// ip of an iproute2 without `ip stats` (its message and exit status, from
// iproute2's ip/ip.c), a tc and the rest missing.
func TestToolsProbeInARealShell(t *testing.T) {
	dir := t.TempDir()
	writeExec(t, dir, "tc")
	if err := os.WriteFile(filepath.Join(dir, "ip"), []byte(`#!/bin/sh
case "$*" in
"-V") echo "ip utility, iproute2-ss200127";;
*stats*) echo 'Object "stats" is unknown, try "ip help".' >&2; exit 255;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	out := runSh(t, "PATH="+dir+"; "+ToolsProbeCommand)
	got, err := ParseTools(out)
	if err != nil {
		t.Fatalf("probe printed %q: %v", out, err)
	}
	if !reflect.DeepEqual(got.Found, []string{"tc"}) || !strings.Contains(got.Lacking["ip"], "ip utility, iproute2-ss200127 has no `ip stats`") ||
		!strings.Contains(got.Lacking["tcpdump"], "tcpdump is not installed (exit 127") || got.Setsid.Exit != 127 {
		t.Errorf("probe printed %q: found %q, lacking %q, setsid %+v", out, got.Found, got.Lacking, got.Setsid)
	}
}

// The checks, run through WithHostTools, send tc and ip to the host runner
// and every OVS command to the OVS container; with no tool missing the OVS
// runner itself is returned.
func TestHostToolsThroughRealChecks(t *testing.T) {
	qdisc := ok([]byte("qdisc ingress ffff: parent ffff:fff1 ----------------\n"))
	ovs := &fakeRunner{results: map[string][]remote.Result{
		CmdTunnels:         {ok(readTestdata(t, "ovs/vxlan-tunnels-4790.json"))},
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
	f, err := DiscoverTunnels(ctx, hv)
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
