package faultlab

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The listing WaitVswitchdRecovered reads (`ovs-vsctl -f csv --data=bare
// --no-headings --columns=name,type,ofport list Interface`) on a hypervisor
// of each backend, with the names the lab's tunnels have
// (e2e/offload/testdata/ovs/vxlan-tunnels-4790.json, ovn/tunnels-ovn-geneve.json);
// an interface not opened yet has no ofport (bare: empty; string data: []).
func TestParseInterfaces(t *testing.T) {
	out := "br-int,internal,65534\nvxlan-c6120c0c,vxlan,2\nul0,,1\ntap1a2b3c4d-5e,,\novn-9c0d1e-0,geneve,[]\nbroken,,-1\n\n"
	got, err := ParseInterfaces(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Iface{{"br-int", "internal", 65534}, {"vxlan-c6120c0c", "vxlan", 2}, {"ul0", "", 1}, {"tap1a2b3c4d-5e", "", 0}, {"ovn-9c0d1e-0", "geneve", 0}, {"broken", "", -1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseInterfaces = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"name,type\n", "br-int,internal,x\n", ",vxlan,2\n"} {
		if _, err := ParseInterfaces(bad); err == nil || !strings.Contains(err.Error(), strings.TrimSpace(bad)) {
			t.Errorf("ParseInterfaces(%q) = %v, want an error quoting the line", bad, err)
		}
	}
}

// `ovs-ofctl -O OpenFlow13 --no-names dump-flows BRIDGE table=0`: the OVS
// agent's br-tun (a tunnel's ingress flow goes to table 4) and
// ovn-controller's br-int (a Geneve port's ingress flow moves the tunnel key).
func TestInPorts(t *testing.T) {
	brTun := ` cookie=0x5e6f7a8b9c0d1e2f, duration=3.512s, table=0, n_packets=0, n_bytes=0, priority=1,in_port=1 actions=goto_table:2
 cookie=0x5e6f7a8b9c0d1e2f, duration=1.204s, table=0, n_packets=0, n_bytes=0, priority=1,in_port=2 actions=goto_table:4
 cookie=0x5e6f7a8b9c0d1e2f, duration=3.512s, table=0, n_packets=0, n_bytes=0, priority=0 actions=drop
`
	if got, want := InPorts(brTun), map[int]bool{1: true, 2: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("InPorts(br-tun) = %v, want %v", got, want)
	}
	brInt := ` cookie=0x0, duration=0.912s, table=0, n_packets=0, n_bytes=0, priority=100,in_port=3 actions=move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],resubmit(,38)
 cookie=0x0, duration=0.912s, table=0, n_packets=0, n_bytes=0, priority=100,in_port=14,vlan_tci=0x0000/0x1000 actions=load:0x3->NXM_NX_REG13[],load:0x1->NXM_NX_REG11[],resubmit(,8)
 cookie=0x0, duration=0.912s, table=0, n_packets=0, n_bytes=0, priority=0 actions=drop
`
	if got, want := InPorts(brInt), map[int]bool{3: true, 14: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("InPorts(br-int) = %v, want %v", got, want)
	}
	if got := InPorts(""); len(got) != 0 {
		t.Errorf("InPorts of no flows = %v", got)
	}
}

// /proc/<pid>/stat of a running, a zombie and a dead ovs-vswitchd; a comm
// with a ')' in it does not fool the state's place.
func TestProcDead(t *testing.T) {
	for stat, want := range map[string]bool{
		"1234 (ovs-vswitchd) S 1 1234 1234 0 -1 4194560": false,
		"1234 (ovs-vswitchd) Z 1 1234 1234 0 -1 4194564": true,
		"1234 (ovs-vswitchd) X 1 1234 1234 0 -1":         true,
		"99 (a) Z (b) R 1 99":                            false,
		"garbage":                                        false,
	} {
		if got := ProcDead(stat); got != want {
			t.Errorf("ProcDead(%q) = %v, want %v", stat, got, want)
		}
	}
}

// The restart script meets the lab as lab/up.sh recorded it: the matrix's
// LAB_STATE, none of this process's release, backend, computes or domain.
func TestLabScriptEnv(t *testing.T) {
	t.Setenv("LAB_STATE", "/elsewhere")
	t.Setenv("LAB_RELEASE", "epoxy")
	t.Setenv("LAB_BACKEND", "ovn")
	t.Setenv("LAB_ROOTFS", "/var/tmp/rootfs")
	t.Setenv("OS_CLOUD", "x")
	env := strings.Join(labScriptEnv("/var/lib/asap2lab"), "\n") + "\n"
	for _, want := range []string{"LAB_STATE=/var/lib/asap2lab\n", "LAB_ROOTFS=/var/tmp/rootfs\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("labScriptEnv lacks %q", want)
		}
	}
	for _, not := range []string{"LAB_STATE=/elsewhere", "LAB_RELEASE=", "LAB_BACKEND=", "OS_CLOUD="} {
		if strings.Contains(env, not) {
			t.Errorf("labScriptEnv passes %q", not)
		}
	}
}

// The pid file names the matrix signals are lab/up.sh's (`start NAME ...`),
// and ovs-vswitchd's one command line is lib/ovs-vswitchd.sh's, used by
// up.sh and by Restart alike.
func TestUpShPidNames(t *testing.T) {
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join("..", rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	up, vs := read("up.sh"), read(filepath.Join("lib", "ovs-vswitchd.sh"))
	for _, want := range []string{
		"start " + ServiceNeutronServer + " ",
		"start " + ServiceNovaAPI + " ",
		`start "nova-compute-$(hv_host "$n")"`,
		`vswitchd_start "$n"`,
	} {
		if !strings.Contains(up, want) {
			t.Errorf("lab/up.sh has no %q", want)
		}
	}
	if strings.Contains(up, "ovs-vswitchd \"unix:") {
		t.Errorf("lab/up.sh starts ovs-vswitchd itself: its command line must stay in lib/ovs-vswitchd.sh alone")
	}
	if got := VswitchdService(Hypervisor{Number: "2"}); !strings.Contains(vs, `start "hv$n-ovs-vswitchd"`) || got != "hv2-ovs-vswitchd" {
		t.Errorf("VswitchdService = %q, lib/ovs-vswitchd.sh must start \"hv$n-ovs-vswitchd\"", got)
	}
	if got := NovaComputeHost(Hypervisor{Number: "2"}); got != "compute2" {
		t.Errorf("NovaComputeHost = %q", got)
	}
}

// A lab process by its environment marker, or by a $LAB_STATE/ path in its
// command line when setproctitle overwrote the environment
// (neutron-server); not another lab's, not a path that merely starts alike.
func TestIsLabProc(t *testing.T) {
	const state = "/var/lib/asap2lab"
	env := []byte("PATH=/usr/bin\x00ASAP2LAB_PROC=/var/lib/asap2lab\x00LC_ALL=C.UTF-8\x00")
	first := []byte("ASAP2LAB_PROC=/var/lib/asap2lab\x00PATH=/usr/bin\x00")
	other := []byte("ASAP2LAB_PROC=/var/lib/asap2lab2\x00")
	title := []byte("neutron-server: api worker (/usr/bin/python3 -c import sys neutron-server --config-file /var/lib/asap2lab/etc/neutron/neutron.conf)\x00")
	for _, c := range []struct {
		name         string
		env, cmdline []byte
		want         bool
	}{
		{"marker", env, []byte("ovs-vswitchd\x00unix:/x\x00"), true},
		{"marker first", first, nil, true},
		{"another lab's marker", other, []byte("sleep\x00infinity\x00"), false},
		{"title with a config path", []byte("neutron-server: api worker"), title, true},
		{"a path that only starts alike", nil, []byte("x\x00/var/lib/asap2lab2/y\x00"), false},
		{"nothing", nil, nil, false},
	} {
		if got := IsLabProc(c.env, c.cmdline, state); got != c.want {
			t.Errorf("%s: IsLabProc = %v, want %v", c.name, got, c.want)
		}
	}
}
