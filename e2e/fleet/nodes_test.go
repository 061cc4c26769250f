package fleet

import (
	"reflect"
	"strings"
	"testing"
)

// inventory is a MOSK-like cloud: hypervisor names carry a domain their
// service hosts do not (what aggregates and zones list).
func inventory() Inventory {
	hv := func(n, state, status string) Hypervisor {
		return Hypervisor{Name: n + ".cloud.example", ServiceHost: n, State: state, Status: status}
	}
	return Inventory{
		Hypervisors: []Hypervisor{
			hv("cmp-3", "up", "enabled"), hv("cmp-1", "up", "enabled"), hv("cmp-2", "up", "enabled"),
			hv("cmp-4", "down", "enabled"), hv("cmp-5", "up", "disabled"), hv("cmp-6", "up", "enabled"),
		},
		Aggregates: []HostGroup{{Name: "asap2", Hosts: []string{"cmp-1", "cmp-2", "cmp-4", "cmp-9"}}, {Name: "solo", Hosts: []string{"cmp-6"}}},
		Zones:      []HostGroup{{Name: "nova", Hosts: []string{"cmp-6", "cmp-5", "cmp-3"}}},
	}
}

func TestResolveNodes(t *testing.T) {
	d := ".cloud.example"
	for _, tc := range []struct {
		name    string
		src     Source
		want    []string
		skipped []Skipped
	}{
		{"list", Source{Nodes: []string{"cmp-3" + d, "cmp-1" + d}}, []string{"cmp-1" + d, "cmp-3" + d}, nil},
		{"all", Source{All: true}, []string{"cmp-1" + d, "cmp-2" + d, "cmp-3" + d, "cmp-6" + d},
			[]Skipped{{"cmp-4" + d, "state down"}, {"cmp-5" + d, "status disabled"}}},
		{"aggregate", Source{Aggregate: "asap2"}, []string{"cmp-1" + d, "cmp-2" + d},
			[]Skipped{{"cmp-4" + d, "state down"}, {"cmp-9", "in host aggregate asap2 but no hypervisor has this service host"}}},
		{"zone", Source{AvailabilityZone: "nova"}, []string{"cmp-3" + d, "cmp-6" + d}, []Skipped{{"cmp-5" + d, "status disabled"}}},
	} {
		got, err := ResolveNodes(tc.src, inventory())
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got.Names(), tc.want) || !reflect.DeepEqual(got.Skipped, tc.skipped) {
			t.Errorf("%s: nodes %v skipped %v; want %v, %v", tc.name, got.Names(), got.Skipped, tc.want, tc.skipped)
		}
		for _, n := range got.Nodes {
			if n.Name != n.ServiceHost+d {
				t.Errorf("%s: node %+v: service host not kept", tc.name, n)
			}
		}
	}
}

func TestResolveNodesRefuses(t *testing.T) {
	d := ".cloud.example"
	for _, tc := range []struct {
		name string
		src  Source
		want []string
	}{
		{"every bad name at once", Source{Nodes: []string{"cmp-1" + d, "cmp-7" + d, "cmp-2", "cmp-4" + d, "cmp-5" + d}}, []string{
			`node "cmp-7.cloud.example" is not a hypervisor Nova reports`,
			`node "cmp-2" is not a hypervisor Nova reports (it is the service host of cmp-2.cloud.example: the list takes hypervisor names)`,
			`node "cmp-4.cloud.example" cannot carry a pair: state down`,
			`node "cmp-5.cloud.example" cannot carry a pair: status disabled`,
		}},
		{"unknown aggregate", Source{Aggregate: "gpu"}, []string{`host aggregate "gpu" is not one Nova reports (it reports asap2, solo)`}},
		{"unknown zone", Source{AvailabilityZone: "az9"}, []string{`availability zone "az9" is not one Nova reports (it reports nova)`}},
		{"one node", Source{Aggregate: "solo"}, []string{`host aggregate "solo" gives 1 usable node(s) [cmp-6.cloud.example]; a fleet needs at least 2`}},
		{"no source", Source{}, []string{"no node source"}},
	} {
		_, err := ResolveNodes(tc.src, inventory())
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to say %q", tc.name, err, w)
			}
		}
	}
}
