package harness

import (
	"context"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures/fakecloud"
)

// mlx5Ethtool is `ethtool -i` of a ConnectX representor, naming its PCI
// device (bus-info) for devlink.
var mlx5Ethtool = fakeremote.Reply{Stdout: []byte("driver: mlx5e_rep\nversion: 6.8\nfirmware-version: 26.36.1010 (MT_0000000547)\nbus-info: 0000:03:00.0\n")}

// hostFacts answers the host facts CollectEnvironment asks both
// hypervisors and guests: ethtool's answer is ethtool, and devlink gives
// devlink[i] on hypervisor i.
func hostFacts(t *testing.T, wd *pair, ethtool fakeremote.Reply, devlink [2]fakeremote.Reply) {
	t.Helper()
	for _, g := range wd.guests {
		g.On("uname -r", fakeremote.Reply{Stdout: []byte("6.8.0-45-generic\n")})
		g.On("iperf3 --version", fakeremote.Reply{Stdout: []byte("iperf 3.16 (cJSON 1.7.15)\n")})
	}
	for i, hv := range wd.hvs {
		hv.On("uname -r", fakeremote.Reply{Stdout: []byte("6.8.0-45-generic\n")})
		hv.On("ovs-vsctl --version", fakeremote.Reply{Stdout: readFile(t, "../envinfo/testdata/ovs-vsctl-version.txt")})
		hv.On("tc -V", fakeremote.Reply{Stdout: readFile(t, "../envinfo/testdata/tc-V-ubuntu2404.txt")})
		hv.On(OVNVersionCommand, fakeremote.Reply{Exit: 127})
		hv.On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), fakeremote.Reply{Stdout: []byte("rep1\n")})
		hv.On("ethtool -i rep1", ethtool)
		hv.On(envinfo.InfoCommand("0000:03:00.0"), devlink[i])
	}
}

// A run's results.json carries the services' versions as the fake cloud's
// documents give them, and they survive CollectEnvironment's rewrite of
// the environment (as the build and the run's other identity do).
func TestServiceVersionsInResultsFile(t *testing.T) {
	wd := newPair(t)
	s := wd.session()
	fc := fakecloud.New()
	t.Cleanup(fc.Close)
	s.run.Clients = &cloud.Clients{Tenant: &cloud.Set{Compute: fc.Compute(), Network: fc.Network()}}
	if err := s.Results.Update(func(r *results.Results) {
		r.Environment.BuildID, r.Environment.Harness = "pipeline-4711", harnessBuild()
	}); err != nil {
		t.Fatal(err)
	}
	s.run.RecordServiceVersions(context.Background())
	hostFacts(t, wd, mlx5Ethtool, [2]fakeremote.Reply{{Exit: 127}, {Exit: 127}})
	if err := s.CollectEnvironment(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := results.Load(s.Results.Path())
	if err != nil {
		t.Fatal(err)
	}
	env := got.Environment
	if env.ComputeMinMicroversion != fakecloud.ComputeMinVersion || env.ComputeMaxMicroversion != fakecloud.ComputeMaxVersion ||
		!reflect.DeepEqual(env.NetworkAPIVersions, []string{"v2.0 CURRENT"}) {
		t.Errorf("services: compute %q..%q, network %q", env.ComputeMinMicroversion, env.ComputeMaxMicroversion, env.NetworkAPIVersions)
	}
	if env.BuildID != "pipeline-4711" || env.Harness == nil || env.Harness.Revision == "" {
		t.Errorf("build id %q, harness %+v", env.BuildID, env.Harness)
	}
	if len(got.Errors) != 0 {
		t.Errorf("errors: %v", got.Errors)
	}
}

// A version document that fails is an error of the environment, and
// Nova's maximum falls back on the clients' check.
func TestServiceVersionsFailure(t *testing.T) {
	wd := newPair(t)
	s := wd.session()
	fc := fakecloud.New()
	t.Cleanup(fc.Close)
	fc.Faults = append(fc.Faults, &fakecloud.Fault{Method: "GET", Path: regexp.MustCompile(`^$`), Status: 503, Body: `{"message": "down"}`})
	s.run.Clients = &cloud.Clients{Tenant: &cloud.Set{Compute: fc.Compute(), Network: fc.Network(), ComputeMaxMicroversion: "2.95"}}
	s.run.RecordServiceVersions(context.Background())
	got := s.Results.Snapshot()
	if got.Environment.ComputeMaxMicroversion != "2.95" || len(got.Environment.NetworkAPIVersions) != 1 {
		t.Errorf("environment %+v", got.Environment)
	}
	if len(got.Errors) != 1 || !strings.Contains(got.Errors[0], "environment: compute version document") {
		t.Errorf("errors %q, want the compute document named", got.Errors)
	}
}

// The NIC's firmware by devlink: a flash not activated is recorded (both
// versions) and warned of; a hypervisor without devlink says so and is no
// problem; devlink's failure is one.
func TestCollectEnvironmentNICFirmware(t *testing.T) {
	pending := readFile(t, "../envinfo/testdata/devlink-info-mlx5-pending.json")
	same := readFile(t, "../envinfo/testdata/devlink-info-mlx5.json")
	cases := []struct {
		name    string
		devlink [2]fakeremote.Reply
		want    [2][2]string
		errors  []string
		warned  bool
	}{
		{"flashed, not activated", [2]fakeremote.Reply{{Stdout: pending}, {Stdout: same}},
			[2][2]string{{"26.36.1010", "26.41.1000"}, {"16.26.0100", "16.26.0100"}}, nil, true},
		{"no devlink", [2]fakeremote.Reply{{Exit: 127, Stderr: []byte("sh: 1: devlink: not found\n")}, {Stdout: same}},
			[2][2]string{{results.NoDevlink, results.NoDevlink}, {"16.26.0100", "16.26.0100"}}, nil, false},
		{"devlink fails", [2]fakeremote.Reply{{Exit: 1, Stderr: []byte("Failed to connect to devlink Netlink\n")}, {Stdout: []byte("{\"info\":{}}\n")}},
			[2][2]string{}, []string{"devlink -j dev info pci/0000:03:00.0: exit 1: Failed to connect to devlink Netlink", "want the versions of one device, got 0"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wd := newPair(t)
			s := wd.session()
			hostFacts(t, wd, mlx5Ethtool, c.devlink)
			if err := s.CollectEnvironment(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := s.Results.Snapshot()
			for i, h := range got.Environment.Hypervisors {
				if h.NICFirmwareRunning != c.want[i][0] || h.NICFirmwareStored != c.want[i][1] {
					t.Errorf("%s: running %q stored %q, want %q", h.Name, h.NICFirmwareRunning, h.NICFirmwareStored, c.want[i])
				}
			}
			if len(got.Errors) != len(c.errors) {
				t.Fatalf("errors %q, want %q", got.Errors, c.errors)
			}
			for i, e := range c.errors {
				if !strings.Contains(got.Errors[i], e) {
					t.Errorf("error %q lacks %q", got.Errors[i], e)
				}
			}
			if warned := strings.Contains(wd.console.String(), results.FirmwareNotActivated+" (running 26.36.1010, stored 26.41.1000)"); warned != c.warned {
				t.Errorf("warned %v, want %v:\n%s", warned, c.warned, wd.console.String())
			}
		})
	}
}
