package faultlab

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A clouds.yaml as lab/up.sh writes it (passwords left out).
const labClouds = `clouds:
  asap2lab:
    auth:
      auth_url: http://198.18.0.1:5000/v3
      username: demo
      project_name: demo
  asap2lab-admin:
    auth:
      auth_url: http://198.18.0.1:5000/v3
      username: admin
      project_name: admin
`

// writeLayout runs write_layout of lab/lib/common.sh (what lab/up.sh
// calls) with LAB_STATE=dir and LAB_RELEASE=release and returns the file
// it wrote.
func writeLayout(t *testing.T, dir, release string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", `source lab/lib/common.sh && write_layout`)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "LAB_STATE="+dir, "LAB_RELEASE="+release)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write_layout: %v: %s", err, out)
	}
	return filepath.Join(dir, "layout.yaml")
}

// The committed lab/harness.yaml, the layout lab/up.sh writes and a
// clouds.yaml of the same shape as up.sh's give the lab's names.
func TestLoadCommittedHarnessAndUpLayout(t *testing.T) {
	state := t.TempDir()
	layout := writeLayout(t, state, "zed")
	harness, clouds, layoutPath := LabFiles("../..", state)
	if layoutPath != layout {
		t.Fatalf("LabFiles layout %s, write_layout wrote %s", layoutPath, layout)
	}
	if err := os.WriteFile(clouds, []byte(labClouds), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Load(harness, clouds, layout)
	if err != nil {
		t.Fatal(err)
	}
	if l.Keystone != "198.18.0.1:5000" || l.Tenant != "asap2lab" || l.Admin != "asap2lab-admin" || l.Prefix != "asap2e2e" || l.TrafficPort != 5201 {
		t.Errorf("Load = keystone %q tenant %q admin %q prefix %q port %d", l.Keystone, l.Tenant, l.Admin, l.Prefix, l.TrafficPort)
	}
	if l.Bridge != "br-int" || l.GuestNetns("abc") != "asap2lab-vm-abc" {
		t.Errorf("bridge %q, guest netns %q", l.Bridge, l.GuestNetns("abc"))
	}
	want := []Hypervisor{
		{Name: "compute1", Address: "198.18.0.11", Number: "1", Netns: "asap2lab-hv1"},
		{Name: "compute2", Address: "198.18.0.12", Number: "2", Netns: "asap2lab-hv2"},
	}
	if !reflect.DeepEqual(l.Hypervisors, want) {
		t.Errorf("hypervisors = %+v, want %+v", l.Hypervisors, want)
	}
	if len(l.CommandPrefix) != 0 {
		t.Errorf("zed runs the host's programs, got command prefix %q", l.CommandPrefix)
	}
	// epoxy's programs live in the Debian 13 root: the matrix's ovs-ofctl,
	// openstack and iperf3 go through lab/epoxy/rootfs-exec.
	epoxy, err := Load(harness, clouds, writeLayout(t, t.TempDir(), "epoxy"))
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	if want := []string{filepath.Join(root, "lab", "epoxy", "rootfs-exec")}; !reflect.DeepEqual(epoxy.CommandPrefix, want) {
		t.Errorf("epoxy command prefix %q, want %q", epoxy.CommandPrefix, want)
	}
	if h, err := l.Hypervisor("compute2"); err != nil || h.Netns != "asap2lab-hv2" {
		t.Errorf("Hypervisor(compute2) = %+v, %v", h, err)
	}
	if _, err := l.Hypervisor("compute9"); err == nil || !strings.Contains(err.Error(), "harness.yaml (hypervisors.hosts)") {
		t.Errorf("an unknown hypervisor gave %v", err)
	}
}

func TestLoadMissingLayoutSaysWhoWritesIt(t *testing.T) {
	state := t.TempDir()
	harness, clouds, layout := LabFiles("../..", state)
	_, err := Load(harness, clouds, layout)
	if err == nil || !strings.Contains(err.Error(), layout) || !strings.Contains(err.Error(), "lab/up.sh writes it") || !strings.Contains(err.Error(), clouds) {
		t.Errorf("missing clouds.yaml and layout.yaml gave %v", err)
	}
}

// Every problem at once, each with its file and key.
func TestParseLabProblems(t *testing.T) {
	harness := `run: {name_prefix: ""}
cloud: {tenant: t1}
hypervisors:
  hosts:
    compute1: {address: 10.0.0.1}
    compute2: {address: 10.0.0.2}
    compute3: {}
`
	clouds := "clouds:\n  t1:\n    auth: {username: x}\n"
	layout := `integration_bridge: br-int
command_prefix: [rootfs-exec]
hypervisors:
  compute1: {number: 1, netns: hv1, address: 10.0.0.9}
  compute2: {number: 0, netns: hv2, address: 10.0.0.2}
`
	_, err := ParseLab("h.yaml", []byte(harness), "c.yaml", []byte(clouds), "l.yaml", []byte(layout))
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		"h.yaml: run.name_prefix: missing",
		"h.yaml: cloud.admin: missing",
		"h.yaml: traffic.port: must be > 0, got 0",
		"c.yaml: clouds.t1.auth.auth_url: missing (the entry cloud.tenant of h.yaml names)",
		`l.yaml: command_prefix: the program must be an absolute path, got "rootfs-exec"`,
		"l.yaml: guest_netns_prefix: missing",
		`l.yaml: hypervisors.compute1.address: "10.0.0.9", but h.yaml has "10.0.0.1": not the same lab`,
		"l.yaml: hypervisors.compute2.number: must be > 0, got 0",
		"h.yaml: hypervisors.hosts.compute3.address: missing",
		"l.yaml: hypervisors.compute3: missing (h.yaml names it in hypervisors.hosts)",
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A key the layout does not know is refused (the layout is ours).
	if _, err := ParseLab("h.yaml", []byte(harness), "c.yaml", []byte(clouds), "l.yaml", []byte("bridge: br-int\n")); err == nil || !strings.Contains(err.Error(), "l.yaml") || !strings.Contains(err.Error(), "bridge") {
		t.Errorf("an unknown layout key gave %v", err)
	}
}

func TestParseLabKeystonePort(t *testing.T) {
	harness := "run: {name_prefix: p}\ncloud: {tenant: t, admin: a}\ntraffic: {port: 5201}\nhypervisors: {hosts: {c1: {address: 10.0.0.1}}}\n"
	layout := "integration_bridge: br-int\nguest_netns_prefix: vm-\nhypervisors: {c1: {number: 1, netns: hv1, address: 10.0.0.1}}\n"
	for url, want := range map[string]string{
		"https://keystone.example/v3": "keystone.example:443",
		"http://10.1.2.3/identity":    "10.1.2.3:80",
		"http://[fd00::1]:5000/v3":    "[fd00::1]:5000",
		"http://198.18.0.1:5000/v3":   "198.18.0.1:5000",
	} {
		clouds := "clouds:\n  t: {auth: {auth_url: '" + url + "'}}\n  a: {auth: {auth_url: '" + url + "'}}\n"
		l, err := ParseLab("h", []byte(harness), "c", []byte(clouds), "l", []byte(layout))
		if err != nil {
			t.Errorf("%s: %v", url, err)
		} else if l.Keystone != want {
			t.Errorf("%s: keystone %q, want %s", url, l.Keystone, want)
		}
	}
	clouds := "clouds:\n  t: {auth: {auth_url: 'not a url'}}\n"
	if _, err := ParseLab("h", []byte(harness), "c", []byte(clouds), "l", []byte(layout)); err == nil ||
		!strings.Contains(err.Error(), `c: clouds.t.auth.auth_url: not a URL with a host, got "not a url"`) || !strings.Contains(err.Error(), "c: clouds.a: missing") {
		t.Errorf("a bad auth_url and a missing admin entry gave %v", err)
	}
}

// A lab brought up with LAB_BACKEND=ovn: up.sh records the backend, its
// layout names it, and the matrix's rows start from lab/harness-ovn.yaml
// (Geneve); the OVS config against an OVN layout is refused naming both.
func TestLoadOVNBackend(t *testing.T) {
	state := t.TempDir()
	cmd := exec.Command("bash", "-c", `source lab/lib/common.sh && write_layout && echo "$LAB_BACKEND" >"$LAB_STATE/backend"`)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "LAB_STATE="+state, "LAB_RELEASE=zed", "LAB_BACKEND=ovn")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write_layout: %v: %s", err, out)
	}
	harness, clouds, layout := LabFiles("../..", state)
	if filepath.Base(harness) != "harness-ovn.yaml" {
		t.Fatalf("LabFiles on an OVN lab gave %s", harness)
	}
	if err := os.WriteFile(clouds, []byte(labClouds), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Load(harness, clouds, layout)
	if err != nil {
		t.Fatal(err)
	}
	if l.Backend != BackendOVN {
		t.Errorf("backend %q, want ovn", l.Backend)
	}
	ovsHarness := filepath.Join("..", "..", "lab", "harness.yaml")
	_, err = Load(ovsHarness, clouds, layout)
	if err == nil || !strings.Contains(err.Error(), "network.type: vxlan, but the lab's backend is ovn") || !strings.Contains(err.Error(), layout) {
		t.Errorf("lab/harness.yaml on an OVN lab gave %v", err)
	}
	// An OVS lab (the default, or a layout written before the key existed)
	// keeps lab/harness.yaml.
	if h, _, _ := LabFiles("../..", t.TempDir()); filepath.Base(h) != "harness.yaml" {
		t.Errorf("LabFiles without a backend record gave %s", h)
	}
}
