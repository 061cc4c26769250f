package results

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// config.port_security is written on every run, false included, and read
// back; a file written before it existed loads as ModeUnrecorded.
func TestPortSecurityModeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		mode *bool
		json string
		want string
	}{
		{new(false), `"port_security": false`, ModeSecurityGroupsOff},
		{new(true), `"port_security": true`, ModeSecurityGroupsOn},
	} {
		file := filepath.Join(t.TempDir(), "results.json")
		if _, err := NewWriter(file, Results{SchemaVersion: SchemaVersion, RunID: "r1", Config: ConfigSummary{ExpectedPath: PathBaseline, PortSecurity: tc.mode}}); err != nil {
			t.Fatal(err)
		}
		back, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := back.Config.Mode(); got != tc.want {
			t.Errorf("mode %v: read back %q, want %q", *tc.mode, got, tc.want)
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(tc.json)) {
			t.Errorf("mode %v: %s not written:\n%s", *tc.mode, tc.json, raw)
		}
	}
	old := []byte(`{"schema_version": 1, "run_id": "old", "started_at": "2026-11-30T10:00:00Z",
		"config": {"cloud": "c", "build_label": "", "expected_path": "asap2", "profiles": [], "duration_seconds": 30, "repeats": 1, "checks": []},
		"environment": {"cloud": "", "build_label": "", "hypervisors": [], "guests": [], "mtu": 0, "guest_kernel": "", "insecure_host_keys": false},
		"profiles": [], "offload": [], "timings": [], "thresholds": [], "errors": []}`)
	r, err := Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if r.Config.Mode() != ModeUnrecorded {
		t.Errorf("a file without config.port_security: %q, want %q", r.Config.Mode(), ModeUnrecorded)
	}
}
