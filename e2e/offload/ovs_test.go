package offload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func TestOVSCommandTable(t *testing.T) {
	const crictl = "crictl exec -i $(crictl ps -q --name openvswitch-vswitchd)"
	cases := []struct{ prefix, cmd, want string }{
		{"", "ovs-vsctl show", "ovs-vsctl show"},
		{"  ", "ovs-vsctl show", "ovs-vsctl show"},
		{crictl, "ovs-vsctl show", crictl + " sh -c 'ovs-vsctl show'"},
		{"docker exec openvswitch_vswitchd ", cmdDpctlAll, "docker exec openvswitch_vswitchd sh -c 'ovs-appctl dpctl/dump-flows -m'"},
		{"ip netns exec hv1", FindInterfaceCommand("p'1 $x"), `ip netns exec hv1 sh -c 'ovs-vsctl --bare --columns=name find Interface '\''external_ids:iface-id=p'\''\'\'''\''1 $x'\'''`},
		{"env OVS_RUNDIR=/x", "ovs-ofctl dump-flows br-int 'cookie=0x1/-1'", `env OVS_RUNDIR=/x sh -c 'ovs-ofctl dump-flows br-int '\''cookie=0x1/-1'\'''`},
		{"env OVS_RUNDIR=/x", "ovs-dpctl show", "env OVS_RUNDIR=/x sh -c 'ovs-dpctl show'"},
		// Never a prefix for the host's own tools.
		{crictl, "tc -s -j filter show dev rep1 ingress", "tc -s -j filter show dev rep1 ingress"},
		{crictl, "ip -j link show dev vxlan_sys_4790", "ip -j link show dev vxlan_sys_4790"},
		{crictl, "tcpdump -i rep1 -c 10", "tcpdump -i rep1 -c 10"},
		{crictl, "ethtool -i rep1", "ethtool -i rep1"},
		{crictl, "ovs-vsctl-not show", "ovs-vsctl-not show"},
	}
	for _, c := range cases {
		if got := OVSCommand(c.prefix, c.cmd); got != c.want {
			t.Errorf("OVSCommand(%q, %q)\n got %s\nwant %s", c.prefix, c.cmd, got, c.want)
		}
	}
}

// TestOVSCommandReachesTheToolUnchanged runs OVSCommand's line in a real sh,
// with an ovs-vsctl stand-in that prints its arguments one per line and an
// `env` prefix: quotes, blanks and $ arrive as the caller quoted them, and
// the prefix's own expansions happen in the outer shell.
func TestOVSCommandReachesTheToolUnchanged(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	stub := "#!/bin/sh\necho \"ctx=$CTX\"\nfor a in \"$@\"; do echo \"[$a]\"; done\n"
	if err := os.WriteFile(filepath.Join(dir, "ovs-vsctl"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--bare", "find", "Interface", "external_ids:iface-id=it's $HOME", "a  b", `"dq"`, "$(echo no)"}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = remote.ShellQuote(a)
	}
	cmd := "ovs-vsctl " + strings.Join(quoted, " ")
	line := OVSCommand("env CTX=$(echo hv1) PATH="+dir+":$PATH", cmd)
	out, err := exec.Command("sh", "-c", line).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", line, err, out)
	}
	want := "ctx=hv1\n"
	for _, a := range args {
		want += "[" + a + "]\n"
	}
	if string(out) != want {
		t.Errorf("line %s\n got %q\nwant %q", line, out, want)
	}
}

// TestOVSPrefixThroughRealChecks runs the tc check (with VXLAN discovery)
// and the dpctl check through WithOVSPrefix over a recording runner: every
// OVS command carries the prefix, tc and ip never do.
func TestOVSPrefixThroughRealChecks(t *testing.T) {
	const prefix = "crictl exec -i $(crictl ps -q --name openvswitch-vswitchd)"
	p := func(cmd string) string { return OVSCommand(prefix, cmd) }
	qdisc := ok([]byte("qdisc ingress ffff: parent ffff:fff1 ----------------\n"))
	inner := &fakeRunner{results: map[string][]remote.Result{
		p(CmdTunnels):                              {ok(readTestdata(t, "ovs/vxlan-tunnels-4790.json"))},
		p(CmdBridgeDatapaths):                      {ok(readTestdata(t, "ovs/bridges-system.json"))},
		LinkCommand("vxlan_sys_4790"):              {ok(readTestdata(t, "ovs/ip-link-vxlan_sys_4790.json"))},
		"tc qdisc show dev vxlan_sys_4790 ingress": {qdisc},
		"tc qdisc show dev rep1 ingress":           {qdisc},
		TCCommand("rep1"):                          {ok([]byte("[]\n"))},
		TCCommand("vxlan_sys_4790"):                {ok([]byte("[]\n"))},
		p(cmdDpctlOffloaded):                       {ok(nil)},
		p(cmdDpctlAll):                             {ok(readTestdata(t, "sw/dpctl-tcp-all-1.txt")), ok(readTestdata(t, "sw/dpctl-tcp-all-2.txt"))},
	}}
	hv := WithOVSPrefix(inner, prefix)
	ctx := context.Background()
	f, err := DiscoverTunnels(ctx, hv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Devices, []string{"vxlan_sys_4790"}) {
		t.Fatalf("discovery through the prefix: %+v", f)
	}
	tc, err := CheckTC(ctx, hv, TCInput{Devices: []string{"rep1"}, MACs: []string{recMAC1, recMAC2}, Samples: 2, Decap: &f})
	if err != nil {
		t.Fatal(err)
	}
	if tc.Verdict != results.VerdictSoftware || !strings.Contains(tc.Reason, "vxlan_sys_4790: ") || !strings.Contains(tc.Reason, "VXLAN decap: OVS VXLAN tunnels on UDP port 4790") {
		t.Errorf("tc: %s %q", tc.Verdict, tc.Reason)
	}
	dp, err := CheckDpctl(ctx, hv, DpctlInput{MACs: []string{recMAC1, recMAC2}, Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if dp.Verdict == results.VerdictInconclusive {
		t.Errorf("dpctl through the prefix: %s %q", dp.Verdict, dp.Reason)
	}
	var ovs, host int
	for _, call := range inner.calls {
		first, _, _ := strings.Cut(call, " ")
		switch first {
		case "tc", "ip", "tcpdump", "ethtool":
			host++
			if strings.Contains(call, "crictl") {
				t.Errorf("host command got the OVS prefix: %s", call)
			}
		default:
			ovs++
			if !strings.HasPrefix(call, prefix+" sh -c 'ovs-") {
				t.Errorf("OVS command without the prefix: %s", call)
			}
		}
	}
	if ovs < 4 || host < 5 {
		t.Errorf("calls: %d OVS, %d host: %q", ovs, host, inner.calls)
	}
	for _, e := range append(tc.Evidence, dp.Evidence...) {
		if strings.Contains(e.Cmd, "ovs-") && !strings.HasPrefix(e.Cmd, prefix) {
			t.Errorf("evidence %s records %q, not the command as sent", e.Name, e.Cmd)
		}
	}
}

func TestWithOVSPrefixEmptyIsTheRunner(t *testing.T) {
	r := &fakeRunner{}
	if WithOVSPrefix(r, " ") != remote.Runner(r) {
		t.Error("an empty prefix must leave the runner as it is")
	}
}
