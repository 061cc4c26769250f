package offload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The fake hypervisor answers with the recorded (testdata/sw) and public
// (testdata/hw) outputs; see testdata/README.md for their sources.

func TestCheckTCRecordedSoftware(t *testing.T) {
	hv := &fakeRunner{results: map[string][]remote.Result{
		"tc qdisc show dev offrec-rep1 ingress": {ok(readTestdata(t, "sw/tc-qdisc-noingress.txt"))},
		TCCommand("offrec-rep1"):                {ok(readTestdata(t, "sw/tc-noqdisc.json"))},
	}}
	c, err := CheckTC(context.Background(), hv, TCInput{Devices: []string{"offrec-rep1"}, MACs: []string{recMAC1, recMAC2}, Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != results.CheckTC || c.Verdict != results.VerdictSoftware || !strings.Contains(c.Reason, "offrec-rep1: no ingress qdisc") {
		t.Errorf("got %s %q", c.Verdict, c.Reason)
	}
	names := []string{}
	for _, e := range c.Evidence {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "tc-qdisc-offrec-rep1.txt,tc-offrec-rep1-sample1.json,tc-offrec-rep1-sample2.json" {
		t.Errorf("evidence: %v", names)
	}
	if c.Evidence[1].Cmd != "tc -s -j filter show dev offrec-rep1 ingress" || string(c.Evidence[1].Output) != "[]\n" || c.Evidence[1].Target != "fake-hv" {
		t.Errorf("evidence file: %+v", c.Evidence[1])
	}
}

func TestCheckTCHardwareJSONAndTextFallback(t *testing.T) {
	qdisc := ok([]byte("qdisc ingress ffff: parent ffff:fff1 ----------------\n"))
	hv := &fakeRunner{results: map[string][]remote.Result{
		"tc qdisc show dev vxlan_sys_4789 ingress": {qdisc},
		"tc qdisc show dev enp8s0f0_1 ingress":     {qdisc},
		TCCommand("vxlan_sys_4789"):                {ok(readTestdata(t, "hw/tc-mlx5-vxlan-decap.json")), ok(readTestdata(t, "hw/tc-mlx5-vxlan-decap-sample2.json"))},
		// An old tc whose JSON for the encap rule does not parse: text is used.
		TCCommand("enp8s0f0_1"):     {ok([]byte(`[{"protocol":"ip","pref":4,"kind":"flower","options":{"actions":[{"order":1 tunnel_key set`))},
		TCTextCommand("enp8s0f0_1"): {ok(readTestdata(t, "hw/tc-mlx5-vf-rep-encap.txt")), ok(readTestdata(t, "hw/tc-mlx5-vf-rep-encap-sample2.txt"))},
	}}
	c, err := CheckTC(context.Background(), hv, TCInput{Devices: []string{"enp8s0f0_1", "vxlan_sys_4789"}, MACs: []string{mlxMACLocal, mlxMACRemote}, Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != results.VerdictOffloaded || !strings.Contains(c.Reason, "vxlan_sys_4789: direction 0a:40:bd:30:89:99 -> ca:2e:a7:3f:f5:0f: offloaded") || !strings.Contains(c.Reason, "enp8s0f0_1: direction ca:2e:a7:3f:f5:0f -> 0a:40:bd:30:89:99: offloaded") {
		t.Errorf("got %s %q", c.Verdict, c.Reason)
	}
	var txt int
	for _, e := range c.Evidence {
		if strings.HasSuffix(e.Name, ".txt") && strings.HasPrefix(e.Name, "tc-enp8s0f0_1-sample") {
			txt++
		}
	}
	if txt != 2 {
		t.Errorf("text fallback evidence files: %d, want 2", txt)
	}
}

func TestCheckTCToolProblems(t *testing.T) {
	nodev := remote.Result{ExitCode: 1, Stderr: readTestdata(t, "sw/tc-nodev.txt.stderr")}
	hv := &fakeRunner{results: map[string][]remote.Result{
		"tc qdisc show dev offrec-nosuch ingress": {nodev},
		TCCommand("offrec-nosuch"):                {nodev},
	}}
	c, err := CheckTC(context.Background(), hv, TCInput{Devices: []string{"offrec-nosuch"}, MACs: []string{recMAC1}, Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "device offrec-nosuch does not exist") {
		t.Errorf("missing device: %s %q", c.Verdict, c.Reason)
	}
	for _, call := range hv.calls {
		if call == TCTextCommand("offrec-nosuch") {
			t.Error("text form tried for a missing device")
		}
	}
	// Newer kernels: "Cannot find specified qdisc" is an empty listing.
	hv = &fakeRunner{results: map[string][]remote.Result{
		TCCommand("rep0"): {{ExitCode: 2, Stderr: []byte("Error: Cannot find specified qdisc on specified device.\n")}},
	}}
	c, err = CheckTC(context.Background(), hv, TCInput{Devices: []string{"rep0"}, MACs: []string{recMAC1}, Samples: 2})
	if err != nil || c.Verdict != results.VerdictSoftware {
		t.Errorf("no qdisc: %s %q %v", c.Verdict, c.Reason, err)
	}
	// Bad input and transport failure are errors.
	if _, err := CheckTC(context.Background(), hv, TCInput{Devices: []string{"rep0"}, Samples: 0}); err == nil {
		t.Error("samples 0 accepted")
	}
	if _, err := CheckTC(context.Background(), hv, TCInput{Samples: 2}); err == nil {
		t.Error("no device accepted")
	}
	if _, err := CheckTC(context.Background(), &fakeRunner{err: errors.New("ssh: connection lost")}, TCInput{Devices: []string{"rep0"}, Samples: 2}); err == nil || !strings.Contains(err.Error(), "connection lost") {
		t.Errorf("transport failure: %v", err)
	}
}

func TestCheckSpacingHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hv := &fakeRunner{results: map[string][]remote.Result{}}
	// The first Run already sees the cancelled context.
	if _, err := CheckDpctl(ctx, hv, DpctlInput{Samples: 2, Spacing: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Errorf("dpctl: %v", err)
	}
}

func TestCheckDpctl(t *testing.T) {
	hv := &fakeRunner{results: map[string][]remote.Result{
		cmdDpctlOffloaded: {ok(readTestdata(t, "sw/dpctl-tcp-offloaded-1.txt")), ok(readTestdata(t, "sw/dpctl-tcp-offloaded-2.txt"))},
		cmdDpctlAll:       {ok(readTestdata(t, "sw/dpctl-tcp-all-1.txt")), ok(readTestdata(t, "sw/dpctl-tcp-all-2.txt"))},
	}}
	c, err := CheckDpctl(context.Background(), hv, DpctlInput{MACs: []string{recMAC1, recMAC2}, Samples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != results.VerdictSoftware || !strings.Contains(c.Reason, "dp:ovs") || len(c.Evidence) != 4 {
		t.Errorf("recorded software path: %s %q (%d evidence files)", c.Verdict, c.Reason, len(c.Evidence))
	}

	hv = &fakeRunner{results: map[string][]remote.Result{
		cmdDpctlOffloaded: {ok(readTestdata(t, "hw/dpctl-kubeovn-offloaded.txt")), ok(readTestdata(t, "hw/dpctl-kubeovn-offloaded-sample2.txt"))},
		cmdDpctlAll:       {ok(readTestdata(t, "hw/dpctl-kubeovn-offloaded.txt")), ok(readTestdata(t, "hw/dpctl-kubeovn-offloaded-sample2.txt"))},
	}}
	c, err = CheckDpctl(context.Background(), hv, DpctlInput{MACs: []string{kubeMAC1, kubeMAC2}, Samples: 2})
	if err != nil || c.Verdict != results.VerdictOffloaded {
		t.Errorf("hardware path: %s %q %v", c.Verdict, c.Reason, err)
	}

	hv = &fakeRunner{results: map[string][]remote.Result{
		cmdDpctlOffloaded: {{ExitCode: 1, Stderr: []byte("2026-12-02T09:00:00Z|00001|unixctl|WARN|failed to connect to /run/openvswitch/ovs-vswitchd.1.ctl\novs-appctl: cannot connect to \"/run/openvswitch/ovs-vswitchd.1.ctl\" (No such file or directory)\n")}},
	}}
	c, err = CheckDpctl(context.Background(), hv, DpctlInput{MACs: []string{kubeMAC1}, Samples: 2})
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "exited 1") {
		t.Errorf("ovs-appctl failure: %s %q %v", c.Verdict, c.Reason, err)
	}
}
