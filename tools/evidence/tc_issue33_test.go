package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 33 re-checked offline: the same inputs as e2e/offload's
// tc_issue33_test.go (testdata/issue33, see its README) give the harness's
// answers here too.
func TestTCIssue33Classes(t *testing.T) {
	f := func(n string) string { return filepath.Join(offTD, "issue33", n) }
	pair := "fa:16:3e:4a:11:01,fa:16:3e:4a:11:02"
	for _, c := range []struct {
		name    string
		args    []string
		verdict string
		reason  []string
	}{
		// Class 1. Old code: inconclusive, "hardware packets +0, software packets +4294967296".
		{"hardware packets printed in 32 bits, text", []string{f("tc-pkt32-wrap-1.txt"), f("tc-pkt32-wrap-2.txt")}, "offloaded", []string{"hardware packets +12000000, software packets +0", "32 bits"}},
		{"hardware packets printed in 32 bits, JSON", []string{f("tc-pkt32-wrap-1.json"), f("tc-pkt32-wrap-2.json")}, "offloaded", []string{"hardware packets +12000000, software packets +0"}},
		// Class 2. Old code: inconclusive, "did not grow".
		{"rule replaced under the same handle", []string{f("tc-replaced-1.txt"), f("tc-replaced-2.json")}, "offloaded", []string{"hardware packets +7200000", "replaced"}},
		// Class 5. Old code: offloaded, "software packets +3000000".
		{"half a bond in hardware", []string{f("tc-bond-half-1.txt"), f("tc-bond-half-2.txt")}, "", []string{"25.0 %", "0.1 %"}},
		// Class 7. Old code: offloaded, "hardware packets +7000000".
		{"a sample of another hypervisor", []string{f("tc-otherhost-1.txt"), f("tc-otherhost-2.txt")}, "inconclusive", []string{"not samples of the same rules", "198.18.1.11", "198.18.1.12"}},
		// With the span the harness measured, the age says it too.
		{"a sample of another hypervisor, --span", []string{"--span", "10.3s", f("tc-otherhost-1.txt"), f("tc-otherhost-2.txt")}, "inconclusive", []string{"installed 434 s ago in the first sample and 1210 s ago in the last, 10.3s apart: older than the span"}},
		{"rule replaced, --span", []string{"--span", "10.3s", f("tc-replaced-1.txt"), f("tc-replaced-2.txt")}, "offloaded", []string{"hardware packets +7200000", "replaced"}},
		// Class 5 with the hypervisor's links: bond0 has two ports.
		{"in_hw_count below the block's ports", []string{"--links", f("ip-link-vflag.json"), f("tc-bond-count-1.txt"), f("tc-bond-count-2.txt")}, "inconclusive", []string{"in_hw_count 1, but block 9 has 2 ports", "enp8s0f0np0, enp8s0f1np1"}},
		{"in_hw_count of every port", []string{"--links", f("ip-link-vflag.json"), f("tc-bond-whole-1.txt"), f("tc-bond-whole-2.txt")}, "offloaded", []string{"software packets 3 of 12000000, within the tolerance of 0.1 %"}},
	} {
		code, m, stderr := runCmd(t, append([]string{"tc", "--mac", pair}, c.args...)...)
		reason, _ := m["reason"].(string)
		switch {
		case code != 0:
			t.Errorf("%s: exit %d: %s", c.name, code, stderr)
		case c.verdict == "" && m["verdict"] == "offloaded":
			t.Errorf("%s: got offloaded: %s", c.name, reason)
		case c.verdict != "" && m["verdict"] != c.verdict:
			t.Errorf("%s: got %v, want %s: %s", c.name, m["verdict"], c.verdict, reason)
		}
		for _, r := range c.reason {
			if !strings.Contains(reason, r) {
				t.Errorf("%s: reason lacks %q: %s", c.name, r, reason)
			}
		}
	}
}

// Files the harness saved for two devices, or two hypervisors, are refused
// as a pair before their rules are read. Old code: judged them.
func TestTCFilesOfTwoDevicesAreRefused(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(offTD, "hw")
	put := func(rel, from string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mac := "ca:2e:a7:3f:f5:0f,0a:40:bd:30:89:99"
	a := put("offload/tcp/compute1/tc-vxlan_sys_4789-sample1.txt", "tc-mlx5-vxlan-decap.txt")
	for _, c := range []struct {
		name, second, want string
	}{
		{"another device", put("offload/tcp/compute1/tc-enp8s0f0_1-sample2.txt", "tc-mlx5-vxlan-decap-sample2.txt"), "device vxlan_sys_4789, enp8s0f0_1"},
		{"another hypervisor", put("offload/tcp/compute2/tc-vxlan_sys_4789-sample2.txt", "tc-mlx5-vxlan-decap-sample2.txt"), "hypervisor compute1, compute2"},
	} {
		code, m, stderr := runCmd(t, "tc", "--mac", mac, a, c.second)
		if code != 0 || m["verdict"] != "inconclusive" || !strings.Contains(fmt.Sprint(m["reason"]), c.want) {
			t.Errorf("%s: exit %d %v %v %s", c.name, code, m["verdict"], m["reason"], stderr)
		}
	}
	code, m, _ := runCmd(t, "tc", "--mac", mac, a, put("offload/tcp/compute1/tc-vxlan_sys_4789-sample2.txt", "tc-mlx5-vxlan-decap-sample2.txt"))
	if code != 0 || m["verdict"] != "offloaded" {
		t.Errorf("the same device's samples: exit %d %v %v", code, m["verdict"], m["reason"])
	}
}
