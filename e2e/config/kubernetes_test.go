package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// loadKubeExample loads an example under a fake home that holds its
// kubeconfig (~/.kube/mosk-25.yaml), returning the config and that path.
func loadKubeExample(t *testing.T, name string) (*Config, string) {
	t.Helper()
	home := fakeHome(t)
	kc := filepath.Join(home, ".kube", "mosk-25.yaml")
	if err := os.MkdirAll(filepath.Dir(kc), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(name, WithGetenv(noEnv), KnownProfiles("tcp-p1", "tcp-p15", "udp-b0-p15"))
	if err != nil {
		t.Fatalf("%s must load and validate:\n%v", name, err)
	}
	return cfg, kc
}

func TestExampleMOSKKubernetesLoadsAndValidates(t *testing.T) {
	cfg, kc := loadKubeExample(t, "examples/mosk-25-kubernetes.yaml")
	k := cfg.Hypervisors.Kubernetes
	hv := "kaas-node-5d6a1b0c-7e2f-4c3d-9a8b-1f2e3d4c5b6a"
	checks := []struct {
		what      string
		got, want any
	}{
		{"access", cfg.Hypervisors.Access, HypervisorAccessKubernetes},
		{"kubeconfig resolved from ~", k.Kubeconfig, kc},
		{"context", k.Context, "mosk-admin@mosk"},
		{"namespace", k.Namespace, "openstack"},
		{"selector", k.PodSelector, DefaultKubePodSelector},
		{"container", k.Container, "openvswitch-vswitchd"},
		{"mapped node", k.NodeNames[hv+".mosk.example.net"], hv},
		{"no SSH hosts", len(cfg.Hypervisors.Hosts), 0},
		{"debug image auto", k.DebugImage, DebugImageAuto},
		{"binding profile", cfg.DataPort.BindingProfile, ProfileNova},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

func TestExampleMOSKOVNLoadsAndValidates(t *testing.T) {
	cfg, _ := loadKubeExample(t, "examples/mosk-25-ovn.yaml")
	k := cfg.Hypervisors.Kubernetes
	if k.Preset != KubePresetOVN || k.PodSelector != KubePresets[KubePresetOVN].PodSelector || k.Container != "vswitchd" ||
		cfg.Network.Type != "geneve" || cfg.Offload.TunnelDevice != "auto" || cfg.Offload.VXLANDevice != "" {
		t.Errorf("preset %q selector %q container %q network %q device %q", k.Preset, k.PodSelector, k.Container, cfg.Network.Type, cfg.Offload.TunnelDevice)
	}
}

// A minimal file with access: kubernetes takes the MOSK defaults.
func TestKubernetesDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Parse("k.yaml", []byte(minimalKube+"hypervisors:\n  access: kubernetes\n"))
	if err != nil {
		t.Fatal(err)
	}
	if probs := cfg.validate(newOptions(nil)); len(probs) > 0 {
		t.Fatalf("must validate:\n%v", probs)
	}
	k := cfg.Hypervisors.Kubernetes
	want := Kubernetes{Namespace: "openstack", Preset: "ovs", PodSelector: "application=openvswitch,component=openvswitch-vswitchd", Container: "openvswitch-vswitchd"}
	if !reflect.DeepEqual(k, want) {
		t.Errorf("got %#v, want %#v", k, want)
	}
	cfg, err = Parse("s.yaml", []byte(minimalKube))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hypervisors.Access != HypervisorAccessSSH || !reflect.DeepEqual(cfg.Hypervisors.Kubernetes, Kubernetes{}) {
		t.Errorf("default access: got %q %#v, want ssh and no kubernetes defaults", cfg.Hypervisors.Access, cfg.Hypervisors.Kubernetes)
	}
}

// preset: ovn gives the ovn-controller pods' selector and container (MOSK
// 25.1+ with ML2/OVN); a key given beside a preset wins; an unknown preset
// is named.
func TestKubernetesPresets(t *testing.T) {
	fakeHome(t)
	for _, c := range []struct {
		block               string
		selector, container string
		problem             string
	}{
		{block: "    preset: ovn\n", selector: "application=openvswitch_ovn,component=controller", container: "vswitchd"},
		{block: "    preset: ovs\n", selector: "application=openvswitch,component=openvswitch-vswitchd", container: "openvswitch-vswitchd"},
		{block: "    preset: ovn\n    container: ovs-vswitchd\n", selector: "application=openvswitch_ovn,component=controller", container: "ovs-vswitchd"},
		{block: "    preset: OVN\n", problem: `k.yaml: hypervisors.kubernetes.preset: must be one of ovs, ovn, got "OVN"`},
		{block: "    debug_namespace: Asap2_Debug\n", problem: `k.yaml: hypervisors.kubernetes.debug_namespace: must be a Kubernetes namespace name (1-63 of a-z0-9-, starting and ending with a letter or digit), got "Asap2_Debug"`},
	} {
		cfg, err := Parse("k.yaml", []byte(minimalKube+"hypervisors:\n  access: kubernetes\n  kubernetes:\n"+c.block))
		if err != nil {
			t.Fatal(err)
		}
		probs := cfg.validate(newOptions(nil))
		if c.problem != "" {
			if len(probs) != 1 || probs[0].Error() != c.problem {
				t.Errorf("%q: problems %v, want %q", c.block, probs, c.problem)
			}
			continue
		}
		k := cfg.Hypervisors.Kubernetes
		if len(probs) > 0 || k.PodSelector != c.selector || k.Container != c.container {
			t.Errorf("%q: %v; selector %q container %q, want %q %q", c.block, probs, k.PodSelector, k.Container, c.selector, c.container)
		}
	}
}

const minimalKube = `run:
  expected_path: baseline
cloud:
  tenant: lab
  admin: lab-admin
image:
  name: ubuntu
flavor:
  name: m1.large
network:
  cidr: 198.18.10.0/24
data_port:
  vnic_type: normal
  port_security: true
guest_access:
  management_network: mgmt
  user: ubuntu
ssh:
  private_key: ~/.ssh/id_ed25519
`

func TestKubernetesProblemsAllAtOnce(t *testing.T) {
	home := fakeHome(t)
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"bad values", `hypervisors:
  access: kubernetes
  sudo: true
  ovs_command_prefix: "crictl exec -i abc"
  hosts:
    cmp-1: {address: 198.18.21.11}
  kubernetes:
    kubeconfig: ~/.kube/missing
    namespace: OpenStack
    pod_selector: "application=openvswitch,component in (a b)"
    container: ""
    node_names:
      cmp-1: Node_1
    debug_image: "netshoot latest"
`, []string{
			`k.yaml: hypervisors.kubernetes.kubeconfig: is not readable (no such file or directory), got "$HOME/.kube/missing"`,
			`k.yaml: hypervisors.kubernetes.namespace: must be a Kubernetes namespace name (1-63 of a-z0-9-, starting and ending with a letter or digit), got "OpenStack"`,
			`k.yaml: hypervisors.kubernetes.container: must be a container name (1-63 of a-z0-9-, starting and ending with a letter or digit), got ""`,
			`k.yaml: hypervisors.kubernetes.pod_selector: must be a label selector of key=value, key!=value, key or !key terms separated by commas; "component in (a b)" is none of these, got "application=openvswitch,component in (a b)"`,
			`k.yaml: hypervisors.kubernetes.node_names.cmp-1: must be a Kubernetes node name (lower-case letters, digits, '-' and '.'), got "Node_1"`,
			`k.yaml: hypervisors.kubernetes.debug_image: must be an image reference without blanks (e.g. registry.example/tools/netshoot:v0.13) or auto, got "netshoot latest"`,
			`k.yaml: hypervisors.hosts: is for hypervisors.access: ssh; with access: kubernetes commands run in the node's OVS pod (see hypervisors.kubernetes)`,
			`k.yaml: hypervisors.sudo: is for hypervisors.access: ssh; with access: kubernetes commands run in the node's OVS pod (see hypervisors.kubernetes)`,
			`k.yaml: hypervisors.ovs_command_prefix: is for hypervisors.access: ssh; with access: kubernetes commands run in the node's OVS pod (see hypervisors.kubernetes)`,
		}},
		{"debug image Auto", "hypervisors:\n  access: kubernetes\n  kubernetes:\n    debug_image: Auto\n", []string{
			`k.yaml: hypervisors.kubernetes.debug_image: write auto in lower case (the OVS pod's own image, running the host's tools), got "Auto"`,
		}},
		{"unknown access", "hypervisors:\n  access: kubectl\n", []string{
			`k.yaml: hypervisors.access: must be one of ssh, kubernetes, got "kubectl"`,
		}},
		{"kubernetes keys with ssh", "hypervisors:\n  access: ssh\n  kubernetes:\n    namespace: openstack\n", []string{
			`k.yaml: hypervisors.kubernetes: is only used with hypervisors.access: kubernetes`,
			`k.yaml: hypervisors.hosts: must map each compute node's hypervisor name to its SSH address when offload.checks is not empty (the checks run there)`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("k.yaml", []byte(minimalKube+c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			probs := cfg.validate(newOptions(nil))
			var err2 error
			if len(probs) > 0 {
				err2 = probs
			}
			assertMessages(t, err2, c.want, home)
		})
	}
}
