package offload

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The ovs/ samples are written from OVS's documented JSON table format
// (testdata/README.md, "ovs/").

func TestParseVXLANTunnels(t *testing.T) {
	cases := []struct {
		file  string
		want  []VXLANTunnel
		ports []int
	}{
		{"ovs/vxlan-tunnels-4790.json", []VXLANTunnel{{"vxlan-c6120c0c", 4790, true}}, []int{4790}},
		{"ovs/vxlan-tunnels-mixed.json", []VXLANTunnel{{"vxlan-0a000102", 4789, false}, {"vxlan-0a000103", 4790, true}, {"vxlan-0a000104", 4790, true}}, []int{4789, 4790}},
		{"ovs/vxlan-tunnels-none.json", nil, nil},
		// OVS 3.5.0 (the Epoxy lab), as the harness saved it.
		{"sw/ovs3.5/vxlan-ovs-tunnels.json", []VXLANTunnel{{"vxlan-c612010c", 4790, true}}, []int{4790}},
	}
	for _, c := range cases {
		got, err := ParseVXLANTunnels(readTestdata(t, c.file))
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.file, got, c.want)
		}
		if ports := VXLANPorts(got); !reflect.DeepEqual(ports, c.ports) {
			t.Errorf("%s: ports %v, want %v", c.file, ports, c.ports)
		}
	}
}

func TestParseVXLANTunnelsBad(t *testing.T) {
	for in, want := range map[string]string{
		`{"data":[["v","vxlan",["map",[["dst_port","0"]]]]],"headings":["name","type","options"]}`:     `options:dst_port "0" is not a UDP port`,
		`{"data":[["v","vxlan",["map",[["dst_port","65536"]]]]],"headings":["name","type","options"]}`: `is not a UDP port`,
		`{"data":[["v","vxlan",["map",[["dst_port","47x"]]]]],"headings":["name","type","options"]}`:   `is not a UDP port`,
		`{"data":[["v","geneve",["map",[]]]],"headings":["name","type","options"]}`:                    `type is not vxlan`,
		`{"data":[["v","vxlan"]],"headings":["name","type","options"]}`:                                `row 0 has 2 cells for 3 headings`,
		`{"data":[["v","vxlan",["set",[]]]],"headings":["name","type","options"]}`:                     `not a map`,
		`{"data":[],"headings":["name","type"]}`:                                                       `no column "options"`,
		`ovs-vsctl: no row "x" in table Interface`:                                                     `ovs-vsctl JSON table`,
		`{"data":[]}`: `no headings`,
	} {
		_, err := ParseVXLANTunnels([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", in, err, want)
		}
	}
}

func TestParseBridgeDatapaths(t *testing.T) {
	lab, err := ParseBridgeDatapaths(readTestdata(t, "ovs/bridges-netdev.json"))
	if err != nil || len(lab) != 4 || !Userspace(lab) {
		t.Errorf("lab bridges: %v %v userspace=%v", lab, err, Userspace(lab))
	}
	sys, err := ParseBridgeDatapaths(readTestdata(t, "ovs/bridges-system.json"))
	if err != nil || sys["br-ex"] != "" || sys["br-int"] != "system" || Userspace(sys) {
		t.Errorf("kernel bridges: %v %v", sys, err)
	}
	if Userspace(nil) || Userspace(map[string]string{"br-int": "netdev", "br-ex": ""}) {
		t.Error("no bridge, or a kernel bridge among netdev ones, is not the userspace datapath")
	}
}

func TestDiscoverVXLAN(t *testing.T) {
	tunnels4790 := ok(readTestdata(t, "ovs/vxlan-tunnels-4790.json"))
	mixed := ok(readTestdata(t, "ovs/vxlan-tunnels-mixed.json"))
	kernel := ok(readTestdata(t, "ovs/bridges-system.json"))
	lab := ok(readTestdata(t, "ovs/bridges-netdev.json"))
	present := ok(readTestdata(t, "ovs/ip-link-vxlan_sys_4790.json"))
	missing := remote.Result{ExitCode: 1, Stderr: readTestdata(t, "ovs/ip-link-missing.stderr")}
	cases := []struct {
		name       string
		answers    map[string][]remote.Result
		devices    []string
		absent     []string
		userspace  bool
		summary    []string
		lastEvName string
	}{
		{"MOSK: 4790 present", map[string][]remote.Result{CmdVXLANTunnels: {tunnels4790}, CmdBridgeDatapaths: {kernel}, LinkCommand("vxlan_sys_4790"): {present}},
			[]string{"vxlan_sys_4790"}, nil, false, []string{"UDP port 4790 (1 interfaces)", "examined vxlan_sys_4790"}, "vxlan-discovery.txt"},
		{"two ports, one device missing", map[string][]remote.Result{CmdVXLANTunnels: {mixed}, CmdBridgeDatapaths: {kernel}, LinkCommand("vxlan_sys_4790"): {present}, LinkCommand("vxlan_sys_4789"): {missing}},
			[]string{"vxlan_sys_4790"}, []string{"vxlan_sys_4789"}, false, []string{"UDP port 4789, 4790 (3 interfaces)", "vxlan_sys_4789 missing"}, "vxlan-discovery.txt"},
		{"the lab: userspace datapath", map[string][]remote.Result{CmdVXLANTunnels: {tunnels4790}, CmdBridgeDatapaths: {lab}},
			nil, nil, true, []string{"userspace datapath", "no kernel VXLAN device", "UDP port 4790"}, "vxlan-discovery.txt"},
		{"no tunnel", map[string][]remote.Result{CmdVXLANTunnels: {ok(readTestdata(t, "ovs/vxlan-tunnels-none.json"))}, CmdBridgeDatapaths: {kernel}},
			nil, []string{"vxlan device (auto)"}, false, []string{"VXLAN device not found: OVS has no interface of type vxlan"}, "vxlan-discovery.txt"},
		{"ovs-vsctl fails", map[string][]remote.Result{CmdVXLANTunnels: {{ExitCode: 1, Stderr: []byte("ovs-vsctl: unix:/run/openvswitch/db.sock: database connection failed (No such file or directory)\n")}}},
			nil, []string{"vxlan device (auto)"}, false, []string{"VXLAN device not found", "database connection failed"}, "vxlan-discovery.txt"},
	}
	for _, c := range cases {
		hv := &fakeRunner{results: c.answers}
		f, err := DiscoverVXLAN(context.Background(), hv)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var absent []string
		for _, a := range f.Absent {
			absent = append(absent, a.Device)
			if a.Why == "" {
				t.Errorf("%s: %s absent without a reason", c.name, a.Device)
			}
		}
		if !reflect.DeepEqual(f.Devices, c.devices) || !reflect.DeepEqual(absent, c.absent) || f.Userspace != c.userspace {
			t.Errorf("%s: devices %v absent %v userspace %v", c.name, f.Devices, absent, f.Userspace)
		}
		for _, s := range c.summary {
			if !strings.Contains(f.Summary, s) {
				t.Errorf("%s: summary %q lacks %q", c.name, f.Summary, s)
			}
		}
		if last := f.Evidence[len(f.Evidence)-1]; last.Name != c.lastEvName || string(last.Output) != f.Summary+"\n" {
			t.Errorf("%s: last evidence %s %q", c.name, last.Name, last.Output)
		}
	}
}

// TestCheckTCDecapNotFound: a tunnel port without its device makes the tc
// check inconclusive with the reason, never a silent pass; the userspace
// datapath is said, and leaves the representor's verdict alone.
func TestCheckTCDecapNotFound(t *testing.T) {
	qdisc := ok([]byte("qdisc ingress ffff: parent ffff:fff1 ----------------\n"))
	answers := func() map[string][]remote.Result {
		return map[string][]remote.Result{
			"tc qdisc show dev offrec-rep1 ingress": {qdisc},
			TCCommand("offrec-rep1"):                {ok([]byte("[]\n"))},
		}
	}
	missing := &VXLANFinding{Ports: []int{4790}, Absent: []AbsentDevice{{"vxlan_sys_4790", "OVS tunnels use UDP port 4790 but vxlan_sys_4790 is not on the host: Device \"vxlan_sys_4790\" does not exist."}},
		Summary: "OVS VXLAN tunnels on UDP port 4790 (1 interfaces): vxlan_sys_4790 missing", Evidence: []EvidenceFile{{Name: "vxlan-discovery.txt"}}}
	c, err := CheckTC(context.Background(), &fakeRunner{results: answers()}, TCInput{Devices: []string{"offrec-rep1"}, MACs: []string{recMAC1, recMAC2}, Samples: 2, Decap: missing})
	if err != nil {
		t.Fatal(err)
	}
	expectVerdict(t, "device missing", c.Verdict, c.Reason, results.VerdictInconclusive, "vxlan_sys_4790: OVS tunnels use UDP port 4790 but vxlan_sys_4790 is not on the host", "VXLAN decap: OVS VXLAN tunnels on UDP port 4790")
	if c.Evidence[0].Name != "vxlan-discovery.txt" {
		t.Errorf("discovery evidence missing: %v", c.Evidence)
	}
	user := &VXLANFinding{Userspace: true, Ports: []int{4790}, Summary: "userspace datapath (every bridge is datapath_type netdev): no kernel VXLAN device"}
	c, err = CheckTC(context.Background(), &fakeRunner{results: answers()}, TCInput{Devices: []string{"offrec-rep1"}, MACs: []string{recMAC1, recMAC2}, Samples: 2, Decap: user})
	if err != nil {
		t.Fatal(err)
	}
	expectVerdict(t, "userspace", c.Verdict, c.Reason, results.VerdictSoftware, "offrec-rep1: no rule of the guest pair", "VXLAN decap: userspace datapath")
}
