package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadLab loads lab/<name> with the lab's SSH key replaced by a fresh one
// (fakeHome's: the lab's state need not exist where the tests run).
func loadLab(t *testing.T, name string) *Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "lab", name))
	if err != nil {
		t.Fatal(err)
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
	strip := func(c *Config) string {
		var keep []string
		for _, l := range strings.Split(c.Redacted(), "\n") {
			if !strings.Contains(l, "build_label") && !strings.Contains(l, "ovs_command_prefix") && !strings.Contains(l, "id_ed25519") && !strings.Contains(l, ".yaml") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if !strings.Contains(variant.Redacted(), want) || !strings.Contains(strip(base), "vxlan_device: auto") {
		t.Errorf("Redacted does not show the keys compared here:\n%s", variant.Redacted())
	}
	if a, b := strip(base), strip(variant); a != b {
		t.Errorf("the variant differs from lab/harness.yaml beyond the prefix:\n--- harness.yaml\n%s\n--- harness-ovs-prefix.yaml\n%s", a, b)
	}
}
