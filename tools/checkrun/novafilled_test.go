package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/zed-set/ is the smoke run of `make lab` on the Zed lab
// (2026-12-03, run 20261203t121615-8378: results.json, topology.json and the
// four port JSON files the harness saved before teardown), written before
// results recorded data_port.binding_profile. Its lab config had the harness
// write binding:profile ("set"), so however the ports look, the run does not
// show Nova writing the capability.
func TestNovaFilledNeedsTheNovaMode(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"nova-filled", "testdata/zed-set"}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), `data_port.binding_profile is "", not nova`) {
		t.Errorf("the refusal does not name the binding mode:\n%s", out.String())
	}
	// The saved data ports are still described: Zed's Nova replaced the
	// harness's ["switchdev"] with the VF's own network capabilities.
	if n := strings.Count(out.String(), `"switchdev"`); n != 2 {
		t.Errorf("%d data ports shown with switchdev, want 2:\n%s", n, out.String())
	}
}

// testdata/epoxy-nova/ is the smoke run of the Epoxy lab (LAB_RELEASE=epoxy,
// 2026-12-03, run 20261203t141037-2e29) with data_port.binding_profile: nova:
// Nova 31 wrote the VF's capabilities, switchdev among them, on both data
// ports.
func TestNovaFilledOnEpoxy(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"nova-filled", "testdata/epoxy-nova"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", code, out.String(), errOut.String())
	}
	if n := strings.Count(out.String(), `"switchdev"`); n != 2 || !strings.Contains(out.String(), "ok: run epoxy-nova left binding:profile to Nova") {
		t.Errorf("want both data ports shown with switchdev and the verdict:\n%s", out.String())
	}
}

// A data port whose saved binding:profile lacks the capability, or whose
// JSON the harness could not read, fails; a missing topology is a usage
// error (exit 2), not a verdict.
func TestNovaFilledFailsOnAPortWithoutTheCapability(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/zed-set", dir)
	res, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res = bytes.Replace(res, []byte(`"expected_path": "baseline",`), []byte(`"expected_path": "baseline", "vnic_type": "direct", "binding_profile": "nova",`), 1)
	if err := os.WriteFile(filepath.Join(dir, "results.json"), res, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"nova-filled", dir}, &out, &errOut); code != 0 {
		t.Fatalf("both data ports hold switchdev, mode nova: exit %d, want 0:\n%s%s", code, out.String(), errOut.String())
	}

	port := filepath.Join(dir, "topology", "port-3fbf3c20-ebce-42c4-9a93-6324e222ef90.json")
	data, err := os.ReadFile(port)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"switchdev"`)) {
		t.Fatalf("%s is not a data port of the recorded run", port)
	}
	if err := os.WriteFile(port, bytes.ReplaceAll(data, []byte(`"switchdev"`), []byte(`"rxfcs"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"nova-filled", dir}, &out, &errOut); code != 1 {
		t.Fatalf("a data port without switchdev: exit %d, want 1:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "NOT FILLED BY NOVA") || !strings.Contains(out.String(), "has no capabilities [switchdev]") {
		t.Errorf("the failure does not say which port lacks the capability:\n%s", out.String())
	}

	if err := os.WriteFile(port, []byte(`{"error": "Forbidden"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"nova-filled", dir}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "could not read the port: Forbidden") {
		t.Errorf("an unreadable port: exit %d:\n%s", code, out.String())
	}

	errOut.Reset()
	if code := run([]string{"nova-filled", t.TempDir()}, &out, &errOut); code != 2 {
		t.Errorf("no results.json: exit %d, want 2 (%s)", code, errOut.String())
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
