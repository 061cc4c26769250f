package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The samples of e2e/envinfo/testdata (README.md there names each source).
func envSample(t *testing.T, name string) []byte {
	return readFile(t, filepath.Join("..", "envinfo", "testdata", name))
}

const (
	eswitchCmd = "devlink -j dev eswitch show pci/0000:03:00.0"
	bondCmd    = "cat /proc/net/bonding/bond0"
)

// linkAnswers are one node's answers to the drift's link commands: the
// VF-LAG host of envinfo's testdata (representors enp1s0f0_0/_1 on p0,
// enp1s0f0 in bond0), devlink's switchdev answer for its PCI device and
// the bond's /proc file. The bond file is the recording with its down
// member (enp1s0f0) brought up: test input, the fleet's healthy majority.
type linkAnswers struct {
	ip, devlink, bond []byte
	devlinkExit       int
}

func healthyLinks(t *testing.T) linkAnswers {
	down := envSample(t, "proc-net-bonding-8023ad-one-down.txt")
	up := strings.Replace(string(down), "Slave Interface: enp1s0f0\nMII Status: down", "Slave Interface: enp1s0f0\nMII Status: up", 1)
	if up == string(down) {
		t.Fatal("the bonding sample has no down member to bring up")
	}
	return linkAnswers{ip: envSample(t, "ip-j-d-link-asap2-vflag.json"), devlink: envSample(t, "devlink-eswitch-switchdev.json"), bond: []byte(up)}
}

// scriptLinks makes node's fake hypervisor find the representor of each
// guest there (a ring puts two on each node: the sending guest's is
// enp1s0f0_0, the receiving guest's enp1s0f0_1) and answer the link
// commands with a.
func scriptLinks(t *testing.T, ff *fakeFleet, node string, a linkAnswers) {
	hv := ff.hvs[node]
	for _, p := range ff.f.Pairs {
		for i, srv := range p.Topology.Servers {
			if srv.Hypervisor != node {
				continue
			}
			// Pair.Topology.Servers is [receiver, sender].
			rep := map[int]string{0: "enp1s0f0_1", 1: "enp1s0f0_0"}[i]
			hv.On(offload.FindInterfaceCommand(srv.DataPortID), fakeremote.Reply{Stdout: []byte(rep + "\n")})
			hv.On("ethtool -i "+rep, fakeremote.Reply{Stdout: envSample(t, "ethtool-i-mlx5_core-cx4lx.txt")})
		}
	}
	hv.On(envinfo.IPLinkCommand, fakeremote.Reply{Stdout: a.ip})
	if a.devlinkExit != 0 {
		hv.On(eswitchCmd, fakeremote.Reply{Exit: a.devlinkExit, Stderr: a.devlink})
	} else {
		hv.On(eswitchCmd, fakeremote.Reply{Stdout: a.devlink})
	}
	hv.On(bondCmd, fakeremote.Reply{Stdout: a.bond})
}

var repMTU = regexp.MustCompile(`("ifname":"enp1s0f0_[01]",[^}]*?"mtu":)9000`)

// Five nodes, four alike; compute2's eswitch is in legacy mode (devlink's
// answer with "legacy" for "switchdev": test input), compute3's bond runs
// with one member down (the recording), compute4's representors are at
// MTU 1500, compute5 has no devlink (exit 127). Each is marked for its
// own key and only for it, with the value the node gave; compute5's value
// says why, its problem is in the results file, and the run goes on.
func TestFleetDriftEswitchMTUAndBond(t *testing.T) {
	nodes := []string{"compute1", "compute2", "compute3", "compute4", "compute5"}
	rec := iperfJSON(t, "v3.12-tcp-p1.json")
	ff := newFakeFleet(t, nodes, config.FleetIsolated, func(fleet.Pair) []byte { return rec }, func(fleet.Pair) time.Duration { return 0 })
	for _, n := range nodes {
		a := healthyLinks(t)
		switch n {
		case "compute2":
			a.devlink = []byte(strings.Replace(string(a.devlink), `"switchdev"`, `"legacy"`, 1))
		case "compute3":
			a.bond = envSample(t, "proc-net-bonding-8023ad-one-down.txt")
		case "compute4":
			a.ip = repMTU.ReplaceAll(a.ip, []byte("${1}1500"))
		case "compute5":
			a.devlink, a.devlinkExit = []byte("sh: 1: devlink: not found\n"), 127
		}
		scriptLinks(t, ff, n, a)
	}
	if err := ff.f.CollectEnvironment(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := results.Load(filepath.Join(ff.f.Dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	healthy := map[string]string{
		results.DriftEswitchMode: "switchdev",
		results.DriftMTURep:      "9000", results.DriftMTUUplink: "9000", results.DriftMTUBond: "9000",
		results.DriftBondState: "802.3ad, 2/2 members up (enp1s0f0 up, enp1s0f1 up)",
	}
	var marked []string
	for _, d := range r.Fleet.Drift {
		for k, want := range healthy {
			if !slices.Contains(d.Differs, k) && d.Values[k] != want {
				t.Errorf("%s: %s %q unmarked, want %q", d.Node, k, d.Values[k], want)
			}
		}
		for _, k := range d.Differs {
			marked = append(marked, d.Node+" "+k+"="+d.Values[k])
		}
	}
	want := []string{
		"compute2 eswitch_mode=legacy",
		"compute3 bond_state=802.3ad, 1/2 members up (enp1s0f0 down, enp1s0f1 up)",
		"compute4 mtu_representor=1500",
		"compute5 eswitch_mode=unknown: devlink dev eswitch show: devlink not found (exit 127)",
	}
	if !slices.Equal(marked, want) {
		t.Errorf("drift marks\n%q\nwant\n%q", marked, want)
	}
	if !slices.ContainsFunc(r.Errors, func(e string) bool {
		return strings.HasPrefix(e, "environment: compute5: ") && strings.Contains(e, eswitchCmd)
	}) {
		t.Errorf("results errors %q lack compute5's devlink", r.Errors)
	}
	// One pass: each link command once per node, the bond read only where
	// there is a bond.
	count := map[string]int{}
	for _, e := range ff.w.Log() {
		count[e.Cmd]++
	}
	for _, c := range []string{envinfo.IPLinkCommand, eswitchCmd, bondCmd} {
		if count[c] != len(nodes) {
			t.Errorf("%q ran %d times, want once per node", c, count[c])
		}
	}
}

// What a node cannot give is an explicit value, never an empty one, and
// the same words on every node lacking the same thing: the lab's veth
// representors (the recording: no eswitch port, no PCI device, so no
// devlink asked), an uplink in no bond (test input: the VF-LAG host with
// p0's master removed), an ip without JSON.
func TestLinkDriftExplicitValues(t *testing.T) {
	noBond := strings.Replace(string(envSample(t, "ip-j-d-link-asap2-vflag.json")), `"master":"bond0",`, "", 1)
	for _, c := range []struct {
		name    string
		rep     string
		busInfo string
		ip      remote.Result
		want    map[string]string
		problem string
		ran     []string
	}{
		{"veth representor", "veth0", "", remote.Result{Stdout: envSample(t, "ip-j-d-link-veth-bridge.json")}, map[string]string{
			results.DriftMTURep:      "9000",
			results.DriftMTUUplink:   "unknown: the representor is no eswitch port (no phys_switch_id)",
			results.DriftMTUBond:     "unknown: the representor is no eswitch port (no phys_switch_id)",
			results.DriftBondState:   "unknown: the representor is no eswitch port (no phys_switch_id)",
			results.DriftEswitchMode: "unknown: no PCI device (neither the uplink's parentdev nor the representor's ethtool -i bus-info)",
		}, "", []string{envinfo.IPLinkCommand}},
		{"uplink in no bond", "enp1s0f0_0", "0000:3b:00.0", remote.Result{Stdout: []byte(noBond)}, map[string]string{
			results.DriftMTURep: "9000", results.DriftMTUUplink: "9000",
			results.DriftMTUBond: DriftNone, results.DriftBondState: DriftNone,
			results.DriftEswitchMode: "switchdev",
		}, "", []string{envinfo.IPLinkCommand, eswitchCmd}},
		{"ip without JSON", "enp1s0f0_0", "0000:03:00.0", remote.Result{ExitCode: 255, Stderr: []byte(`Option "-j" is unknown, try "ip -help".` + "\n")}, map[string]string{
			results.DriftMTURep:      `unknown: ip -j -d link show exited 255: Option "-j" is unknown, try "ip -help".`,
			results.DriftMTUUplink:   `unknown: ip -j -d link show exited 255: Option "-j" is unknown, try "ip -help".`,
			results.DriftMTUBond:     `unknown: ip -j -d link show exited 255: Option "-j" is unknown, try "ip -help".`,
			results.DriftBondState:   `unknown: ip -j -d link show exited 255: Option "-j" is unknown, try "ip -help".`,
			results.DriftEswitchMode: "switchdev", // from the representor's bus-info
		}, "hv1: ", []string{envinfo.IPLinkCommand, eswitchCmd}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := fakeremote.NewWorld()
			hv := fakeremote.New("hv1", w)
			r := c.ip
			hv.On(envinfo.IPLinkCommand, fakeremote.Reply{Stdout: r.Stdout, Stderr: r.Stderr, Exit: r.ExitCode})
			hv.On(eswitchCmd, fakeremote.Reply{Stdout: envSample(t, "devlink-eswitch-switchdev.json")})
			f := &Fleet{Run: &Run{Hypervisors: map[string]remote.Runner{"hv1": hv}}}
			values := map[string]string{}
			var problems []string
			f.linkDrift(context.Background(), "hv1", []string{c.rep}, c.busInfo, values, &problems)
			if fmt.Sprint(values) != fmt.Sprint(c.want) {
				t.Errorf("values\n%v\nwant\n%v", values, c.want)
			}
			if (c.problem == "") != (len(problems) == 0) || (c.problem != "" && !strings.HasPrefix(problems[0], c.problem)) {
				t.Errorf("problems %q, want one starting %q: %v", problems, c.problem, c.problem != "")
			}
			var ran []string
			for _, e := range w.Log() {
				ran = append(ran, e.Cmd)
			}
			if !slices.Equal(ran, c.ran) {
				t.Errorf("ran %q, want %q", ran, c.ran)
			}
		})
	}
}
