package harness

import (
	"os"
	"strings"
	"testing"
)

// testdata/ip-o-link-addr.txt was recorded on this machine (Debian 12,
// iproute2 6.1) in a throwaway namespace holding one end of a veth whose MAC,
// MTU and address were set like a lab guest's data NIC:
//
//	ip netns exec <ns> sh -c 'ip -o link show; ip -o -4 addr show'
func TestInterfaceWithMACAndAddr(t *testing.T) {
	data, err := os.ReadFile("testdata/ip-o-link-addr.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	if got := interfaceWithMAC(out, "FA:16:3E:AA:BB:CC"); got != "eth1" {
		t.Fatalf("interfaceWithMAC = %q, want eth1", got)
	}
	if got := interfaceWithMAC(out, "fa:16:3e:00:00:00"); got != "" {
		t.Fatalf("interfaceWithMAC for an absent MAC = %q, want empty", got)
	}
	if !hasAddr(out, "eth1", "198.18.230.5") {
		t.Fatal("hasAddr(eth1, 198.18.230.5) = false")
	}
	if hasAddr(out, "lo", "198.18.230.5") || hasAddr(out, "eth1", "198.18.230.50") || hasAddr(out, "eth1", "198.18.230") {
		t.Fatal("hasAddr matched the wrong interface or a prefix of the address")
	}
}

// FuzzIPOutput: the `ip -o link` / `ip -o addr` readers never panic, and
// an interface they name is always one the output mentions.
func FuzzIPOutput(f *testing.F) {
	data, err := os.ReadFile("testdata/ip-o-link-addr.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data), "fa:16:3e:aa:bb:cc", "198.18.230.5")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, out, mac, ip string) {
		dev := interfaceWithMAC(out, mac)
		if dev != "" && !strings.Contains(out, dev) {
			t.Fatalf("interfaceWithMAC returned %q, which the output does not contain", dev)
		}
		_ = hasAddr(out, dev, ip)
	})
}
