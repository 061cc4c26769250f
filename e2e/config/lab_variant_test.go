package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// loadLab loads lab/<name> with the lab's SSH key replaced by a fresh one
// (fakeHome's: the lab's state need not exist where the tests run), and its
// kubeconfig, if it names lab/kube's, by an empty file.
func loadLab(t *testing.T, name string) *Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "lab", name))
	if err != nil {
		t.Fatal(err)
	}
	const labKubeconfig = "/var/lib/asap2lab/kube/harness.kubeconfig"
	if bytes.Contains(b, []byte(labKubeconfig)) {
		kc := filepath.Join(t.TempDir(), "harness.kubeconfig")
		if err := os.WriteFile(kc, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(labKubeconfig), []byte(kc))
	}
	const labKey = "/var/lib/asap2lab/ssh/id_ed25519"
	if !bytes.Contains(b, []byte(labKey)) {
		t.Fatalf("lab/%s no longer names %s: update this test", name, labKey)
	}
	key := filepath.Join(fakeHome(t), ".ssh", "id_ed25519")
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte(labKey), []byte(key)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, WithGetenv(noEnv))
	if err != nil {
		t.Fatalf("lab/%s: %v", name, err)
	}
	return cfg
}

// redactedWithout is c.Redacted() less every line holding one of drop
// (the key file and the config's own path always: they differ by test
// directory), for comparing a lab config with its variant.
func redactedWithout(c *Config, drop ...string) string {
	drop = append(drop, "id_ed25519", ".yaml")
	var keep []string
lines:
	for _, l := range strings.Split(c.Redacted(), "\n") {
		for _, d := range drop {
			if strings.Contains(l, d) {
				continue lines
			}
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// TestLabOVSPrefixVariant: lab/harness-ovs-prefix.yaml is lab/harness.yaml
// plus the OVS command prefix (and its build label), so a run of it differs
// from the lab's only in how OVS is reached.
func TestLabOVSPrefixVariant(t *testing.T) {
	base, variant := loadLab(t, "harness.yaml"), loadLab(t, "harness-ovs-prefix.yaml")
	if base.Offload.VXLANDevice != VXLANAuto || base.Hypervisors.OVSCommandPrefix != "" {
		t.Errorf("lab/harness.yaml: vxlan_device %q, ovs_command_prefix %q", base.Offload.VXLANDevice, base.Hypervisors.OVSCommandPrefix)
	}
	const want = "env OVS_RUNDIR=/var/lib/asap2lab/hv$(hostname | tr -cd 0-9)/ovs"
	if variant.Hypervisors.OVSCommandPrefix != want {
		t.Errorf("prefix %q, want %q", variant.Hypervisors.OVSCommandPrefix, want)
	}
	strip := func(c *Config) string { return redactedWithout(c, "build_label", "ovs_command_prefix") }
	if !strings.Contains(variant.Redacted(), want) || !strings.Contains(strip(base), "vxlan_device: auto") {
		t.Errorf("Redacted does not show the keys compared here:\n%s", variant.Redacted())
	}
	if a, b := strip(base), strip(variant); a != b {
		t.Errorf("the variant differs from lab/harness.yaml beyond the prefix:\n--- harness.yaml\n%s\n--- harness-ovs-prefix.yaml\n%s", a, b)
	}
}

// TestLabFleetVariant: lab/harness-fleet.yaml is lab/harness.yaml swept as a
// fleet of four (its header lists the differences): the fleet section,
// compute3 and compute4 beside compute1 and compute2, one profile once, the
// admin's entry as the tenant. Its evidence flows are the lab's (20 s).
func TestLabFleetVariant(t *testing.T) {
	base, variant := loadLab(t, "harness.yaml"), loadLab(t, "harness-fleet.yaml")
	if base.Fleet != nil {
		t.Fatalf("lab/harness.yaml has a fleet section: %+v", base.Fleet)
	}
	f := variant.Fleet
	if f == nil || !f.All || f.Pairs != "ring" || f.Mode != FleetIsolated || f.Outlier.Rule != "ratio" {
		t.Fatalf("lab/harness-fleet.yaml fleet %+v: want every hypervisor in a ring, isolated, the ratio rule", f)
	}
	for n := 1; n <= 4; n++ {
		name, addr := fmt.Sprintf("compute%d", n), fmt.Sprintf("198.18.0.1%d", n)
		if h, ok := variant.Hypervisors.Hosts[name]; !ok || h.Address != addr {
			t.Errorf("hypervisors.hosts.%s = %+v, want address %s (lab/lib/common.sh hv_ctlip)", name, h, addr)
		}
	}
	if len(variant.Traffic.Profiles) != 1 || variant.Traffic.Profiles[0] != "tcp-p1" || variant.Traffic.Repeats != 1 {
		t.Errorf("traffic profiles %v repeats %d, want [tcp-p1] once", variant.Traffic.Profiles, variant.Traffic.Repeats)
	}
	if variant.Cloud.Tenant != variant.Cloud.Admin {
		t.Errorf("cloud.tenant %q, want the admin entry %q (the admin pins the servers: one project for servers and ports)", variant.Cloud.Tenant, variant.Cloud.Admin)
	}
	// Everything else as the lab's own config.
	variant.Fleet = nil
	variant.Cloud.Tenant = base.Cloud.Tenant
	variant.Hypervisors.Hosts = base.Hypervisors.Hosts
	variant.Traffic.Profiles, variant.Traffic.Repeats = base.Traffic.Profiles, base.Traffic.Repeats
	if a, b := redactedWithout(base), redactedWithout(variant); a != b {
		t.Errorf("the fleet variant differs from lab/harness.yaml beyond its list:\n--- harness.yaml\n%s\n--- harness-fleet.yaml\n%s", a, b)
	}
}

// TestLabKubernetesVariant: lab/harness-kube.yaml (LAB_K8S=1) is
// lab/harness.yaml with the hypervisors reached through lab/kube's API
// server instead of SSH, and nothing else changed, so make lab can hold its
// verdicts to the SSH run's.
func TestLabKubernetesVariant(t *testing.T) {
	base, variant := loadLab(t, "harness.yaml"), loadLab(t, "harness-kube.yaml")
	if base.Hypervisors.Access != HypervisorAccessSSH || len(base.Hypervisors.Hosts) != 2 {
		t.Errorf("lab/harness.yaml: access %q, %d hosts; want ssh to compute1, compute2", base.Hypervisors.Access, len(base.Hypervisors.Hosts))
	}
	h := variant.Hypervisors
	if h.Access != HypervisorAccessKubernetes {
		t.Fatalf("lab/harness-kube.yaml: access %q", h.Access)
	}
	k := h.Kubernetes
	if k.Namespace != "openstack" || k.Preset != KubePresetOVS || !strings.HasSuffix(k.Kubeconfig, "harness.kubeconfig") || len(h.Hosts) != 0 {
		t.Errorf("lab/harness-kube.yaml: namespace %q, preset %q, kubeconfig %q, %d hosts", k.Namespace, k.Preset, k.Kubeconfig, len(h.Hosts))
	}
	// The lab's OVS containers lack tcpdump (lab/kube/up.sh): the run needs a
	// debug pod, of a named image (kwok pulls nothing; auto would chroot into
	// a /host kwok's exec does not have) in the OVS pods' namespace.
	if k.DebugImage == "" || k.DebugImage == DebugImageAuto || k.DebugNamespace != "" {
		t.Errorf("lab/harness-kube.yaml: debug_image %q, debug_namespace %q; want a named image in the OVS pods' namespace", k.DebugImage, k.DebugNamespace)
	}
	// No placement.hosts: the pair is spread by anti-affinity and each
	// hypervisor is mapped to its node by Nova's service host, so the same
	// file runs on a lab whose hypervisor names are FQDNs (LAB_HV_DOMAIN).
	if len(variant.Placement.Hosts) != 0 || len(k.NodeNames) != 0 {
		t.Errorf("lab/harness-kube.yaml: placement.hosts %v, node_names %v; want neither (LAB_HV_DOMAIN)", variant.Placement.Hosts, k.NodeNames)
	}
	// Everything but the hypervisors block and the label must be the same.
	strip := func(c *Config) string {
		cp := *c
		cp.Hypervisors = Hypervisors{}
		cp.Run.BuildLabel = ""
		return redactedWithout(&cp)
	}
	if a, b := strip(base), strip(variant); a != b {
		t.Errorf("lab/harness-kube.yaml differs from lab/harness.yaml beyond the hypervisors block:\n--- harness.yaml\n%s\n--- harness-kube.yaml\n%s", a, b)
	}
}

// TestLabOVNVariant: lab/harness-ovn.yaml (LAB_BACKEND=ovn) is
// lab/harness.yaml on ML2/OVN: a Geneve network with the MTU Neutron's Geneve
// arithmetic leaves on the lab's 9000-byte underlay, the tunnel device under
// its current key, its own build label, and nothing else changed, so the OVN
// lab's numbers and verdicts stand beside the OVS lab's.
func TestLabOVNVariant(t *testing.T) {
	base, variant := loadLab(t, "harness.yaml"), loadLab(t, "harness-ovn.yaml")
	if base.Network.Type != "vxlan" || base.Network.MTU != 8950 {
		t.Errorf("lab/harness.yaml: network %s MTU %d, want vxlan 8950", base.Network.Type, base.Network.MTU)
	}
	n := variant.Network
	if n.Type != "geneve" || n.MTU != 9000-results.EncapOverhead(results.NetworkGeneve) {
		t.Errorf("lab/harness-ovn.yaml: network %s MTU %d, want geneve %d", n.Type, n.MTU, 9000-results.EncapOverhead(results.NetworkGeneve))
	}
	if variant.Offload.TunnelDevice != TunnelAuto || variant.Offload.VXLANDevice != "" {
		t.Errorf("lab/harness-ovn.yaml: tunnel_device %q, vxlan_device %q; want tunnel_device auto alone", variant.Offload.TunnelDevice, variant.Offload.VXLANDevice)
	}
	if !strings.Contains(variant.Run.BuildLabel, "OVN") {
		t.Errorf("lab/harness-ovn.yaml: build label %q does not name OVN", variant.Run.BuildLabel)
	}
	strip := func(c *Config) string {
		cp := *c
		cp.Network.Type, cp.Network.MTU = "", 0
		cp.Offload.TunnelDevice, cp.Offload.VXLANDevice = "", ""
		cp.Run.BuildLabel = ""
		return redactedWithout(&cp)
	}
	if a, b := strip(base), strip(variant); a != b {
		t.Errorf("lab/harness-ovn.yaml differs from lab/harness.yaml beyond the backend's keys:\n--- harness.yaml\n%s\n--- harness-ovn.yaml\n%s", a, b)
	}
}
