package faultlab

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultLabState is the lab's state directory when $LAB_STATE is not set
// (lab/lib/common.sh has the same default).
const DefaultLabState = "/var/lib/asap2lab"

// Lab is what the fault matrix knows of the lab, each value read from the
// file that publishes it:
//
//   - lab/harness.yaml, or lab/harness-ovn.yaml on a lab of LAB_BACKEND=ovn
//     (committed; every row's config starts as a copy): run.name_prefix,
//     cloud.tenant, cloud.admin, traffic.port, network.type and the
//     hypervisors' SSH addresses (hypervisors.hosts);
//   - $LAB_STATE/clouds.yaml (lab/up.sh): Keystone's address, from
//     clouds.<cloud.tenant>.auth.auth_url;
//   - $LAB_STATE/layout.yaml (lab/up.sh, write_layout in lab/lib/common.sh):
//     each hypervisor's number (lab/lib/hv-exec N) and network namespace, the
//     backend (ovs or ovn), the integration bridge, the guests' namespace prefix, and the prefix that
//     runs the lab release's programs (none for zed; lab/epoxy/rootfs-exec
//     for epoxy, whose OVS and openstack CLI live in a Debian 13 root).
type Lab struct {
	HarnessFile string
	Base        []byte // lab/harness.yaml as it is
	Prefix      string // run.name_prefix
	Tenant      string // cloud.tenant: the clouds.yaml entry of the tenant
	Admin       string // cloud.admin: the clouds.yaml entry of the admin
	TrafficPort int    // traffic.port: where the harness's iperf3 servers listen

	CloudsFile string
	Keystone   string // host:port of Keystone

	LayoutFile       string
	Backend          string // backend: ovs (ML2/OVS) or ovn (ML2/OVN); "ovs" for a layout written before it existed
	Bridge           string // integration_bridge
	GuestNetnsPrefix string // guest_netns_prefix: a guest's netns is this + its server id
	// CommandPrefix (command_prefix) goes before the lab's own programs the
	// matrix runs: ovs-ofctl in a hypervisor, the openstack CLI, iperf3 in a
	// guest's namespace. Empty in a layout written before it existed.
	CommandPrefix []string
	Hypervisors   []Hypervisor
}

// Hypervisor is one lab hypervisor.
type Hypervisor struct {
	Name    string // the Nova host name (compute1)
	Address string // its SSH address (lab/harness.yaml)
	Number  string // lab/lib/hv-exec's argument
	Netns   string // its network namespace
}

// LabFiles are the paths Load reads. The harness config is the backend's:
// lab/harness-ovn.yaml when $LAB_STATE/backend (lab/up.sh's record of
// LAB_BACKEND) says ovn, else lab/harness.yaml.
func LabFiles(root, state string) (harness, clouds, layout string) {
	harness = filepath.Join(root, "lab", "harness.yaml")
	if b, err := os.ReadFile(filepath.Join(state, "backend")); err == nil && strings.TrimSpace(string(b)) == BackendOVN {
		harness = filepath.Join(root, "lab", "harness-ovn.yaml")
	}
	return harness, filepath.Join(state, "clouds.yaml"), filepath.Join(state, "layout.yaml")
}

// The lab's backends (lab/up.sh LAB_BACKEND) and the tenant network type each
// gives a run.
const (
	BackendOVS = "ovs"
	BackendOVN = "ovn"
)

var backendNetworkType = map[string]string{BackendOVS: "vxlan", BackendOVN: "geneve"}

// Load reads the lab's three files (LabFiles) and checks them.
func Load(harnessFile, cloudsFile, layoutFile string) (*Lab, error) {
	var data [3][]byte
	var errs []error
	for i, f := range []string{harnessFile, cloudsFile, layoutFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			if i == 2 && errors.Is(err, os.ErrNotExist) {
				err = fmt.Errorf("%w (lab/up.sh writes it: a lab brought up before it did must be brought up again)", err)
			}
			errs = append(errs, err)
		}
		data[i] = b
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ParseLab(harnessFile, data[0], cloudsFile, data[1], layoutFile, data[2])
}

// ParseLab checks the three files' contents and returns every problem at
// once, each with its file and key.
func ParseLab(harnessFile string, harness []byte, cloudsFile string, clouds []byte, layoutFile string, layout []byte) (*Lab, error) {
	l := &Lab{HarnessFile: harnessFile, Base: harness, CloudsFile: cloudsFile, LayoutFile: layoutFile}
	var errs []error
	problem := func(file, key, msg string) { errs = append(errs, fmt.Errorf("%s: %s: %s", file, key, msg)) }

	var h struct {
		Run struct {
			NamePrefix string `yaml:"name_prefix"`
		} `yaml:"run"`
		Cloud struct {
			Tenant string `yaml:"tenant"`
			Admin  string `yaml:"admin"`
		} `yaml:"cloud"`
		Traffic struct {
			Port int `yaml:"port"`
		} `yaml:"traffic"`
		Network struct {
			Type string `yaml:"type"`
		} `yaml:"network"`
		Hypervisors struct {
			Hosts map[string]struct {
				Address string `yaml:"address"`
			} `yaml:"hosts"`
		} `yaml:"hypervisors"`
	}
	if err := yaml.Unmarshal(harness, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", harnessFile, err)
	}
	l.Prefix, l.Tenant, l.Admin, l.TrafficPort = h.Run.NamePrefix, h.Cloud.Tenant, h.Cloud.Admin, h.Traffic.Port
	for _, kv := range [][2]string{{"run.name_prefix", l.Prefix}, {"cloud.tenant", l.Tenant}, {"cloud.admin", l.Admin}} {
		if kv[1] == "" {
			problem(harnessFile, kv[0], "missing")
		}
	}
	if l.TrafficPort <= 0 {
		problem(harnessFile, "traffic.port", fmt.Sprintf("must be > 0, got %d", l.TrafficPort))
	}
	if len(h.Hypervisors.Hosts) == 0 {
		problem(harnessFile, "hypervisors.hosts", "missing")
	}

	var c struct {
		Clouds map[string]struct {
			Auth struct {
				AuthURL string `yaml:"auth_url"`
			} `yaml:"auth"`
		} `yaml:"clouds"`
	}
	if err := yaml.Unmarshal(clouds, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", cloudsFile, err)
	}
	if l.Tenant != "" {
		key := "clouds." + l.Tenant + ".auth.auth_url"
		u, err := url.Parse(c.Clouds[l.Tenant].Auth.AuthURL)
		switch {
		case c.Clouds[l.Tenant].Auth.AuthURL == "":
			problem(cloudsFile, key, "missing (the entry cloud.tenant of "+harnessFile+" names)")
		case err != nil || u.Hostname() == "":
			problem(cloudsFile, key, fmt.Sprintf("not a URL with a host, got %q", c.Clouds[l.Tenant].Auth.AuthURL))
		default:
			port := u.Port()
			if port == "" {
				port = map[string]string{"https": "443"}[u.Scheme]
				if port == "" {
					port = "80"
				}
			}
			l.Keystone = net.JoinHostPort(u.Hostname(), port)
		}
	}
	if l.Admin != "" {
		if _, ok := c.Clouds[l.Admin]; !ok {
			problem(cloudsFile, "clouds."+l.Admin, "missing (the entry cloud.admin of "+harnessFile+" names)")
		}
	}

	var y struct {
		Backend           string   `yaml:"backend"`
		IntegrationBridge string   `yaml:"integration_bridge"`
		GuestNetnsPrefix  string   `yaml:"guest_netns_prefix"`
		CommandPrefix     []string `yaml:"command_prefix"`
		Hypervisors       map[string]struct {
			Number  int    `yaml:"number"`
			Netns   string `yaml:"netns"`
			Address string `yaml:"address"`
		} `yaml:"hypervisors"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(layout))
	dec.KnownFields(true)
	if err := dec.Decode(&y); err != nil {
		return nil, fmt.Errorf("%s: %w", layoutFile, err)
	}
	l.Bridge, l.GuestNetnsPrefix, l.CommandPrefix = y.IntegrationBridge, y.GuestNetnsPrefix, y.CommandPrefix
	if len(l.CommandPrefix) > 0 && !filepath.IsAbs(l.CommandPrefix[0]) {
		problem(layoutFile, "command_prefix", fmt.Sprintf("the program must be an absolute path, got %q", l.CommandPrefix[0]))
	}
	if l.Bridge == "" {
		problem(layoutFile, "integration_bridge", "missing")
	}
	l.Backend = y.Backend
	if l.Backend == "" {
		l.Backend = BackendOVS
	}
	if want, ok := backendNetworkType[l.Backend]; !ok {
		problem(layoutFile, "backend", fmt.Sprintf("must be %s or %s, got %q", BackendOVS, BackendOVN, l.Backend))
	} else if typ := cmp.Or(h.Network.Type, "vxlan"); typ != want {
		problem(harnessFile, "network.type", fmt.Sprintf("%s, but the lab's backend is %s (%s), whose tenant networks are %s: the rows would fail at the network check", typ, l.Backend, layoutFile, want))
	}
	if l.GuestNetnsPrefix == "" {
		problem(layoutFile, "guest_netns_prefix", "missing")
	}
	var names []string
	for name := range h.Hypervisors.Hosts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		addr := h.Hypervisors.Hosts[name].Address
		if addr == "" {
			problem(harnessFile, "hypervisors.hosts."+name+".address", "missing")
		}
		hv, ok := y.Hypervisors[name]
		switch {
		case !ok:
			problem(layoutFile, "hypervisors."+name, "missing ("+harnessFile+" names it in hypervisors.hosts)")
			continue
		case hv.Number <= 0:
			problem(layoutFile, "hypervisors."+name+".number", fmt.Sprintf("must be > 0, got %d", hv.Number))
		case hv.Netns == "":
			problem(layoutFile, "hypervisors."+name+".netns", "missing")
		case addr != "" && hv.Address != addr:
			problem(layoutFile, "hypervisors."+name+".address", fmt.Sprintf("%q, but %s has %q: not the same lab", hv.Address, harnessFile, addr))
		}
		l.Hypervisors = append(l.Hypervisors, Hypervisor{Name: name, Address: addr, Number: fmt.Sprint(hv.Number), Netns: hv.Netns})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// Hypervisor returns the lab hypervisor named name (a Nova host name, as in
// topology.json).
func (l *Lab) Hypervisor(name string) (Hypervisor, error) {
	for _, h := range l.Hypervisors {
		if h.Name == name {
			return h, nil
		}
	}
	return Hypervisor{}, fmt.Errorf("hypervisor %q: not a lab hypervisor of %s (hypervisors.hosts)", name, l.HarnessFile)
}

// GuestNetns is the network namespace of the guest with server id id.
func (l *Lab) GuestNetns(id string) string { return l.GuestNetnsPrefix + id }
