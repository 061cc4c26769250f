package offload

import "testing"

// The parser reads OVS's recirculation as tc prints it: "ct zone 3 pipe"
// then "gact action goto chain 1" (text), control_action {"type":"goto",
// "chain":1} (JSON), and the post-ct keys ct_state/ct_zone.
func TestParseTCConntrackStages(t *testing.T) {
	for _, name := range []string{"tc-ct-offloaded-1.txt", "tc-ct-offloaded-1.json"} {
		d := pipeTC(t, name)
		if len(d.Filters) != 2 {
			t.Fatalf("%s: %d filters, want 2", name, len(d.Filters))
		}
		first, later := d.Filters[0], d.Filters[1]
		if c, ok := first.next(); !ok || c != 1 || first.outputs() || first.Chain != 0 {
			t.Errorf("%s: first stage: next %d %v, outputs %v, chain %d", name, c, ok, first.outputs(), first.Chain)
		}
		if _, ok := later.next(); ok || !later.outputs() || later.Chain != 1 || later.Keys["ct_state"] != "+trk+est" {
			t.Errorf("%s: later stage: %+v", name, later)
		}
		if age, ok := first.installedAgo(); !ok || age != 310 {
			t.Errorf("%s: installed %d %v, want 310", name, age, ok)
		}
	}
}

// The parser sees through VLAN tags and reads recirc() and outputs.
func TestParseDpctlPipelineFields(t *testing.T) {
	vlan := pipeDpctl(t, "dpctl-vlan-1.txt")
	if !vlan[1].isIP() || vlan[1].EthType != "0x8100" {
		t.Errorf("802.1Q flow: isIP %v eth_type %q", vlan[1].isIP(), vlan[1].EthType)
	}
	qinq := pipeDpctl(t, "dpctl-qinq-1.txt")
	if et, tagged := qinq[1].ipEthType(); et != "0x0800" || !tagged {
		t.Errorf("802.1ad flow: inner eth_type %q tagged %v", et, tagged)
	}
	ct := pipeDpctl(t, "dpctl-ct-postct-sw-1.txt")
	if id, ok := ct[0].recircTo(); !ok || normRecirc(id) != "1090" || ct[0].outputs() {
		t.Errorf("first stage: recirc %q %v outputs %v", id, ok, ct[0].outputs())
	}
	if _, ok := ct[1].recircTo(); ok || !ct[1].outputs() || normRecirc(ct[1].RecircID) != "1090" {
		t.Errorf("post-ct stage: %+v", ct[1])
	}
	if !vlan[1].outputs() || vlan[0].outputs() == false {
		t.Errorf("pop_vlan,port and push_vlan(..),port both output")
	}
	for _, acts := range []string{"tnl_push(tnl_port(vxlan_sys_4790),header(size=50,type=4),out_port(ul0))", "lb_output(1)", "clone(tnl_push(tnl_port(3),header(size=50)),2)"} {
		if !(DpctlFlow{Actions: acts}).outputs() {
			t.Errorf("actions %q not read as an output", acts)
		}
	}
	for _, acts := range []string{"drop", "ct(zone=1),recirc(0x2)", "userspace(pid=3,slow_path(controller))", "ct_clear,pop_vlan", "tnl_pop(vxlan_sys_4790)"} {
		if (DpctlFlow{Actions: acts}).outputs() {
			t.Errorf("actions %q read as an output", acts)
		}
	}
}
