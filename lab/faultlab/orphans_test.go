package faultlab

import "testing"

// The processes a row's Ending blames on its run. The case that made this
// test (CI, 2026-12-07): signal/ssh-wait-SIGINT's run, interrupted (its
// guests 6480ae90… and 396401d4…, the latter's data address 198.18.10.19),
// and, side by side, hypervisor/ssh-frozen-in-checks' window between guests
// 14a003eb… (198.18.10.19 too: every run's tenant network has the same
// subnet) and ed5e8167…; its iperf3 server and client were counted as
// orphans of the interrupted run.
func TestBelongsTo(t *testing.T) {
	const prefix = "asap2lab-vm-"
	ns := map[string]bool{prefix + "6480ae90": true, prefix + "396401d4": true}
	marks := []string{"fa:16:3e:00:00:01", "198.18.10.19 ", "fa:16:3e:00:00:02", "198.18.10.20 "}
	cases := []struct {
		name string
		p    Proc
		want bool
	}{
		{"in one of its guests", Proc{Netns: prefix + "6480ae90", Cmdline: "iperf3 -s -1 -J -B 198.18.10.19 -p 5201"}, true},
		{"in one of its guests, naming nothing of it", Proc{Netns: prefix + "396401d4", Cmdline: "sleep 30"}, true},
		{"another row's window in another run's guest, same address",
			Proc{Netns: prefix + "14a003eb", Cmdline: "iperf3 -c 198.18.10.19 -p 5201 -J --get-server-output -t 20"}, false},
		{"in a guest's namespace already deleted, naming its address", Proc{Netns: "", Cmdline: "iperf3 -s -1 -J -B 198.18.10.20 -p 5201"}, true},
		{"a hypervisor's capture on its MAC", Proc{Netns: "asap2lab-hv2", Cmdline: "tcpdump -i rep1 ether host fa:16:3e:00:00:02"}, true},
		{"a hypervisor's process naming none of it", Proc{Netns: "asap2lab-hv1", Cmdline: "tcpdump -i rep9 ether host fa:16:3e:00:00:09"}, false},
		{"an address only as a prefix of another", Proc{Netns: "", Cmdline: "iperf3 -c 198.18.10.190 -p 5201"}, false},
		{"the address at the end of the command", Proc{Netns: "", Cmdline: "ping -c 1 198.18.10.19"}, true},
	}
	for _, c := range cases {
		if got := belongsTo(c.p, prefix, ns, marks); got != c.want {
			t.Errorf("%s: belongsTo(%s) = %v, want %v", c.name, c.p, got, c.want)
		}
	}
	// Without a known guest prefix every process is judged by its marks.
	if !belongsTo(Proc{Netns: prefix + "14a003eb", Cmdline: "iperf3 -c 198.18.10.19"}, "", ns, marks) {
		t.Error("with no guest prefix, a process naming the run's address is the run's")
	}
}
