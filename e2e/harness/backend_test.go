package harness

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/fixtures"
	"github.com/mosk-qa/asap2-e2e/fixtures/fakecloud"
)

// The environment record names the backend the run met: Neutron's agent
// list (admin) says ML2/OVN or ML2/OVS, and each hypervisor's ovn-controller
// its version where there is one; an ML2/OVS cloud records no OVN version,
// a hypervisor whose answer is not a version is a problem, and without
// admin credentials the backend is not guessed.
func TestCollectEnvironmentNetworkBackend(t *testing.T) {
	ovnVersion := readFile(t, filepath.Join("..", "envinfo", "testdata", "ovn-controller-version-23.03.1.txt"))
	cases := []struct {
		name      string
		agents    [][2]string // type, host
		admin     bool
		ovn       [2]*fakeremote.Reply
		backend   string
		agentRows []string
		versions  [2]string
		errors    []string
		logged    string
	}{
		{"ML2/OVN", [][2]string{{fixtures.AgentOVNController, "cmp-1"}, {fixtures.AgentOVNController, "cmp-2"}, {fixtures.AgentOVNMetadata, "cmp-1"}, {fixtures.AgentOVNMetadata, "cmp-2"}}, true,
			[2]*fakeremote.Reply{{Stdout: ovnVersion}, {Stdout: ovnVersion}},
			"ml2/ovn", []string{"OVN Controller agent: 2", "OVN Metadata agent: 2"},
			[2]string{"23.03.1 (OVS library 3.1.0, SB schema 20.27.0)", "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)"}, nil, ""},
		{"ML2/OVN, ovn-controller out of reach on one", [][2]string{{fixtures.AgentOVNController, "cmp-1"}}, true,
			[2]*fakeremote.Reply{{Stdout: ovnVersion}, nil},
			"ml2/ovn", []string{"OVN Controller agent: 1"},
			[2]string{"23.03.1 (OVS library 3.1.0, SB schema 20.27.0)", ""}, nil, "no ovn-controller version where the hypervisor commands run"},
		{"ML2/OVS", [][2]string{{fixtures.AgentOVS, "cmp-1"}, {fixtures.AgentOVS, "cmp-2"}, {"DHCP agent", "ctl-1"}}, true,
			[2]*fakeremote.Reply{nil, nil},
			"ml2/ovs", []string{"DHCP agent: 1", "Open vSwitch agent: 2"}, [2]string{}, nil, ""},
		{"an answer that is no version", [][2]string{{fixtures.AgentOVNController, "cmp-1"}}, true,
			[2]*fakeremote.Reply{{Stdout: []byte("ovn-controller: command not found\n")}, nil},
			"ml2/ovn", []string{"OVN Controller agent: 1"}, [2]string{}, []string{`no "ovn-PROGRAM VERSION" in first line "ovn-controller: command not found"`}, ""},
		{"no admin", [][2]string{{fixtures.AgentOVNController, "cmp-1"}}, false,
			[2]*fakeremote.Reply{nil, nil}, "", nil, [2]string{}, nil, "Neutron's agent list (the network backend, ML2/OVS or ML2/OVN) is admin-only, not recorded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wd := newPair(t)
			s := wd.session()
			fc := fakecloud.New()
			t.Cleanup(fc.Close)
			for _, a := range c.agents {
				fc.AddAgent(fakecloud.Obj{"agent_type": a[0], "host": a[1], "binary": "ovn-controller"})
			}
			s.run.Clients = &cloud.Clients{Tenant: &cloud.Set{Compute: fc.Compute(), Network: fc.Network()}}
			if c.admin {
				s.run.Clients.Admin = &cloud.Set{Compute: fc.AdminCompute(), Network: fc.AdminNetwork()}
			}
			for i, hv := range wd.hvs {
				if c.ovn[i] != nil {
					hv.On(OVNVersionCommand, *c.ovn[i])
				}
			}
			if err := s.CollectEnvironment(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := s.Results.Snapshot()
			env := got.Environment
			if env.NetworkBackend != c.backend || !reflect.DeepEqual(env.NetworkAgents, c.agentRows) {
				t.Errorf("backend %q agents %q, want %q %q", env.NetworkBackend, env.NetworkAgents, c.backend, c.agentRows)
			}
			for i, h := range env.Hypervisors {
				if h.OVNControllerVersion != c.versions[i] {
					t.Errorf("%s: ovn-controller %q, want %q", h.Name, h.OVNControllerVersion, c.versions[i])
				}
			}
			var ours []string
			for _, e := range got.Errors {
				if strings.Contains(e, "ovn") || strings.Contains(e, "agents") {
					ours = append(ours, e)
				}
			}
			if len(ours) != len(c.errors) {
				t.Errorf("errors %q, want %q", ours, c.errors)
			}
			for i := range c.errors {
				if i < len(ours) && !strings.Contains(ours[i], c.errors[i]) {
					t.Errorf("error %q lacks %q", ours[i], c.errors[i])
				}
			}
			if c.logged != "" && !strings.Contains(wd.console.String(), c.logged) {
				t.Errorf("log lacks %q:\n%s", c.logged, wd.console.String())
			}
		})
	}
}
