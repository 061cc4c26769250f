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
