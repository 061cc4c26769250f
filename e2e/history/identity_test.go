package history

import (
	"maps"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func load(t *testing.T, path string) *results.Results {
	t.Helper()
	r, err := results.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The identity of recorded runs: the lab's baseline (schema 1, no backend,
// no harness stamp) and a Kubernetes-access run of schema 2 (backend,
// network type, OVN controller, tc, hypervisors by FQDN).
func TestIdentityRecorded(t *testing.T) {
	for _, c := range []struct {
		file string
		want Facts
	}{
		{"testdata/lab-baseline-results.json", Facts{
			FactCloud: "asap2lab", FactMTU: "8950", FactGuestKernel: "6.18.44-fc-v1045",
			"hv.compute1.kernel": "6.18.44-fc-v1045", "hv.compute1.ovs": "3.1.0", "hv.compute1.nic_driver": "veth 1.0",
			"hv.compute2.kernel": "6.18.44-fc-v1045", "hv.compute2.ovs": "3.1.0", "hv.compute2.nic_driver": "veth 1.0",
		}},
		{"../../tools/checkrun/testdata/debug-pod-fqdn/results.json", Facts{
			FactCloud: "asap2lab", FactMTU: "8950", FactGuestKernel: "6.18.44-fc-v1147", FactBackend: "ml2/ovs", FactNetworkType: "vxlan",
			"hv.compute1.asap2lab.test.kernel": "6.18.44-fc-v1147", "hv.compute1.asap2lab.test.ovs": "3.1.0",
			"hv.compute1.asap2lab.test.nic_driver": "veth 1.0", "hv.compute1.asap2lab.test.tc": "iproute2-6.1.0, libbpf 1.1.2",
			"hv.compute1.asap2lab.test.ovn_controller": "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)",
			"hv.compute2.asap2lab.test.kernel":         "6.18.44-fc-v1147", "hv.compute2.asap2lab.test.ovs": "3.1.0",
			"hv.compute2.asap2lab.test.nic_driver": "veth 1.0", "hv.compute2.asap2lab.test.tc": "iproute2-6.1.0, libbpf 1.1.2",
			"hv.compute2.asap2lab.test.ovn_controller": "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)",
		}},
	} {
		got, err := Identity(load(t, c.file))
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%s: %v\n got %v\nwant %v", c.file, err, got, c.want)
		}
	}
}

// withIdentity is the recorded baseline with every identity field of
// schema 2 filled, as a cloud run with devlink and Kubernetes records it.
func withIdentity(t *testing.T) *results.Results {
	r := load(t, "testdata/lab-baseline-results.json")
	e := &r.Environment
	e.Harness = &results.HarnessBuild{Version: "(devel)", Revision: "1d40259abcdef0123456789abcdef0123456789a", Source: results.HarnessSourceLDFlags}
	e.NetworkBackend, e.KubernetesServerVersion = "ml2/ovn", "v1.29.4"
	e.ComputeMinMicroversion, e.ComputeMaxMicroversion = "2.1", "2.95"
	e.NetworkAPIVersions, e.IdentityAPIVersion = []string{"v2.0 CURRENT"}, "v3.14 stable"
	for i := range e.Hypervisors {
		h := &e.Hypervisors[i]
		h.NICFirmware, h.NICFirmwareRunning, h.NICFirmwareStored = "28.39.1002 (MT_0000000359)", "28.39.1002", "28.39.1002"
		h.OVNControllerVersion = "23.03.1"
	}
	return r
}

func TestIdentityAllFields(t *testing.T) {
	got, err := Identity(withIdentity(t))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		FactHarness: "1d40259abcdef0123456789abcdef0123456789a", FactBackend: "ml2/ovn", FactKubernetes: "v1.29.4",
		FactCompute: "2.1 to 2.95", FactNetworkAPI: "v2.0 CURRENT", FactIdentityAPI: "v3.14 stable",
		"hv.compute1.firmware": "28.39.1002 (MT_0000000359)", "hv.compute2.firmware.running": "28.39.1002",
		"hv.compute2.firmware.stored": "28.39.1002", "hv.compute1.ovn_controller": "23.03.1",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// 9 of the run (no network type recorded) and 7 of each hypervisor (no tc)
	if len(got) != 23 {
		t.Errorf("%d facts, want 23: %v", len(got), got)
	}
}

// The sentence check and show print: what changed between two runs, the
// same change on several nodes once, a fact only one run has left out.
func TestEnvNote(t *testing.T) {
	before := withIdentity(t)
	after := withIdentity(t)
	ea := &after.Environment
	ea.Hypervisors[0].Kernel = "6.18.45-fc" // compute2
	ea.Hypervisors[1].Kernel = "6.18.45-fc" // compute1
	ea.Hypervisors[0].NICFirmwareRunning = "28.40.1000"
	ea.Hypervisors[0].TCVersion = "iproute2-6.1.0" // newly read: no change
	ea.ComputeMaxMicroversion = "2.96"
	ea.Harness.Revision, ea.Harness.Modified = "9f17690000000000000000000000000000000000", true
	fb, err := Identity(before)
	if err != nil {
		t.Fatal(err)
	}
	fa, err := Identity(after)
	if err != nil {
		t.Fatal(err)
	}
	want := "environment changed at this run: harness 1d40259abcde → 9f1769000000 (modified); " +
		"Nova microversions 2.1 to 2.95 → 2.1 to 2.96; kernel of compute1, compute2 6.18.44-fc-v1045 → 6.18.45-fc; " +
		"NIC firmware running of compute2 28.39.1002 → 28.40.1000"
	if got := EnvNote(fb, fa); got != want {
		t.Errorf("note:\n got %s\nwant %s", got, want)
	}
	if got := EnvNote(fb, fb); got != "" {
		t.Errorf("no change, note %q", got)
	}
	if got := EnvNote(nil, fa); got != "" {
		t.Errorf("a run without facts before, note %q", got)
	}
	many := Facts{}
	moved := Facts{}
	for _, n := range []string{"cmp1", "cmp2", "cmp3", "cmp4", "cmp5"} {
		many["hv."+n+".kernel"], moved["hv."+n+".kernel"] = "6.1.0-27", "6.1.0-28"
	}
	if got, want := EnvNote(many, moved), "environment changed at this run: kernel of cmp1, cmp2, cmp3 and 2 more 6.1.0-27 → 6.1.0-28"; got != want {
		t.Errorf("fleet note:\n got %s\nwant %s", got, want)
	}
}

// A fleet's drift values give its nodes' facts where the hypervisors list
// gives none ("unknown…" is no fact).
func TestIdentityFleetDrift(t *testing.T) {
	r := fleetShard("run1", "1/1", [][2]string{{"cmp1", "cmp2"}}, "")
	r.Fleet.Drift = []results.FleetNodeDrift{
		{Node: "cmp1", Values: map[string]string{results.DriftKernelVersion: "6.1.0-27", results.DriftNICFirmware: "28.39.1002", results.DriftEswitchMode: "switchdev", results.DriftBondState: "unknown: no bonding"}},
		{Node: "cmp2", Values: map[string]string{results.DriftKernelVersion: " 6.1.0-28 ", results.DriftOVSVersion: "3.3.0"}},
	}
	got, err := Identity(r)
	want := Facts{"hv.cmp1.kernel": "6.1.0-27", "hv.cmp1.firmware": "28.39.1002", "hv.cmp1.eswitch_mode": "switchdev",
		"hv.cmp2.kernel": "6.1.0-28", "hv.cmp2.ovs": "3.3.0"}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("fleet facts: %v\n got %v\nwant %v", err, got, want)
	}
	other := Facts{"hv.cmp1.eswitch_mode": "legacy"}
	if got, want := EnvNote(other, got), "environment changed at this run: eswitch mode of cmp1 legacy → switchdev"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
}

// Bad input names where it was read, the key and the values.
func TestIdentityErrors(t *testing.T) {
	r := load(t, "testdata/lab-baseline-results.json")
	hs := r.Environment.Hypervisors
	dup := hs[1]
	dup.Kernel = "6.2.0"
	nameless := hs[0]
	nameless.Name = " "
	r.Environment.Hypervisors = append(hs, dup, nameless)
	r.Fleet = &results.Fleet{Drift: []results.FleetNodeDrift{{Values: map[string]string{results.DriftKernelVersion: "6.3"}}}}
	_, err := Identity(r)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`environment.hypervisors[2] (compute1): kernel "6.2.0", but environment.hypervisors[1] gave "6.18.44-fc-v1045"`,
		`environment.hypervisors[3]: kernel "6.18.44-fc-v1045" on a node without a name`,
		`fleet.drift[0].values.kernel: kernel "6.3" on a node without a name`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
