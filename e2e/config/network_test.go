package config

import (
	"strings"
	"testing"
)

// network.type geneve is first-class: accepted, and its MTU checked against
// Geneve's encapsulation (58 bytes over IPv4, results.EncapOverhead) as
// VXLAN's is against its 50.
func TestNetworkTypeGeneve(t *testing.T) {
	fakeHome(t)
	base := strings.Replace(minimalKube, "network:\n  cidr: 198.18.10.0/24\n", "offload:\n  checks: []\n", 1)
	cases := []struct {
		network string
		want    []string
	}{
		{"network:\n  cidr: 198.18.10.0/24\n  type: geneve\n", nil},
		{"network:\n  cidr: 198.18.10.0/24\n  type: geneve\n  mtu: 8942\n", nil},
		{"network:\n  cidr: 198.18.10.0/24\n  type: geneve\n  mtu: 9158\n", nil},
		{"network:\n  cidr: 198.18.10.0/24\n  type: geneve\n  mtu: 9166\n", []string{
			"k.yaml: network.mtu: leaves no room for geneve's 58 bytes of encapsulation over IPv4 under a 9216-byte underlay: at most 9158, got 9166"}},
		{"network:\n  cidr: 198.18.10.0/24\n  type: vxlan\n  mtu: 9166\n", nil},
		{"network:\n  cidr: 198.18.10.0/24\n  type: vlan\n  mtu: 9216\n", nil},
		{"network:\n  cidr: 198.18.10.0/24\n  type: genève\n  mtu: 9200\n", []string{
			`k.yaml: network.type: must be one of vxlan, geneve, gre, vlan, flat, got "genève"`}},
	}
	for _, c := range cases {
		cfg, err := Parse("k.yaml", []byte(base+c.network))
		if err != nil {
			t.Fatal(err)
		}
		probs := cfg.validate(newOptions(nil))
		if got := strings.Join(probs.Messages(), "\n"); got != strings.Join(c.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", c.network, got, strings.Join(c.want, "\n"))
		}
	}
}

// offload.tunnel_device replaces offload.vxlan_device: the old key is still
// read, both at once is refused naming the replacement, and a device of the
// other tunnel type than network.type is refused; every problem at once.
func TestTunnelDeviceKey(t *testing.T) {
	fakeHome(t)
	base := strings.Replace(minimalKube, "network:\n  cidr: 198.18.10.0/24\n", "", 1)
	cases := []struct {
		name, yaml string
		device     string
		want       []string
	}{
		{"default", "network:\n  cidr: 198.18.10.0/24\n  type: geneve\noffload:\n  checks: []\n", "auto", nil},
		{"new key", "network:\n  cidr: 198.18.10.0/24\n  type: geneve\noffload:\n  checks: []\n  tunnel_device: genev_sys_6081\n", "genev_sys_6081", nil},
		{"old key still read", "network:\n  cidr: 198.18.10.0/24\noffload:\n  checks: []\n  vxlan_device: vxlan_sys_4790\n", "vxlan_sys_4790", nil},
		{"old key skips", "network:\n  cidr: 198.18.10.0/24\noffload:\n  checks: []\n  vxlan_device: \"\"\n", "", nil},
		{"new key skips", "network:\n  cidr: 198.18.10.0/24\noffload:\n  checks: []\n  tunnel_device: \"\"\n", "", nil},
		{"both keys", "network:\n  cidr: 198.18.10.0/24\noffload:\n  checks: []\n  tunnel_device: auto\n  vxlan_device: auto\n", "auto", []string{
			`k.yaml: offload.vxlan_device: is the old name of offload.tunnel_device, which is also set: keep offload.tunnel_device alone, got "auto"`}},
		{"VXLAN device on a Geneve network, and a bad MTU", "network:\n  cidr: 198.18.10.0/24\n  type: geneve\n  mtu: 9200\noffload:\n  checks: []\n  vxlan_device: vxlan_sys_4790\n", "vxlan_sys_4790", []string{
			"k.yaml: network.mtu: leaves no room for geneve's 58 bytes of encapsulation over IPv4 under a 9216-byte underlay: at most 9158, got 9200",
			`k.yaml: offload.vxlan_device: is OVS's vxlan device but network.type is geneve (its decap rules are on genev_sys_<port>; auto finds it), got "vxlan_sys_4790"`}},
		{"Geneve device on a VXLAN network", "network:\n  cidr: 198.18.10.0/24\noffload:\n  checks: []\n  tunnel_device: genev_sys_6081\n", "genev_sys_6081", []string{
			`k.yaml: offload.tunnel_device: is OVS's geneve device but network.type is vxlan (its decap rules are on vxlan_sys_<port>; auto finds it), got "genev_sys_6081"`}},
		{"not an interface name", "network:\n  cidr: 198.18.10.0/24\noffload:\n  checks: []\n  tunnel_device: genev sys/6081\n", "genev sys/6081", []string{
			`k.yaml: offload.tunnel_device: must be auto (found on each hypervisor), a network interface name (1-15 characters, no '/', ':' or blanks) or empty to skip it, got "genev sys/6081"`}},
	}
	for _, c := range cases {
		cfg, err := Parse("k.yaml", []byte(base+c.yaml))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		probs := cfg.validate(newOptions(nil))
		if got := strings.Join(probs.Messages(), "\n"); got != strings.Join(c.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, strings.Join(c.want, "\n"))
		}
		if got := cfg.Offload.DecapDevice(); got != c.device {
			t.Errorf("%s: DecapDevice %q, want %q", c.name, got, c.device)
		}
	}
}
