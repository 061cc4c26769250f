package results

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A run's identity survives the results file: written by the Writer and
// loaded back, every key holds; a file without them (written before they
// existed) loads unchanged, and a harness record without a source is
// refused, naming the key.
func TestIdentityRoundTrip(t *testing.T) {
	env := Environment{
		Cloud: "lab", BuildLabel: "MOSK 25.2", BuildID: "pipeline-4711",
		Harness:                &HarnessBuild{Version: "(devel)", Revision: "1d40259abcdef0123456789abcdef0123456789a", Time: "2026-05-01T10:00:00Z", Modified: true, Source: HarnessSourceVCS},
		ComputeMinMicroversion: "2.1", ComputeMaxMicroversion: "2.100",
		NetworkAPIVersions: []string{"v2.0 CURRENT"}, IdentityAPIVersion: "v3.14 stable",
		KubernetesServerVersion: "v1.29.4",
		Hypervisors: []Hypervisor{
			{Name: "cmp-1", NICFirmware: "26.36.1010 (MT_0000000547)", NICFirmwareRunning: "26.36.1010", NICFirmwareStored: "26.41.1000"},
			{Name: "cmp-2", NICFirmwareRunning: NoDevlink, NICFirmwareStored: NoDevlink},
		},
	}
	path := filepath.Join(t.TempDir(), "results.json")
	w, err := NewWriter(path, Results{RunID: "r1", StartedAt: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		Config: ConfigSummary{Cloud: "lab", BuildID: "pipeline-4711", ExpectedPath: PathASAP2}, Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Environment, env) || got.Config.BuildID != "pipeline-4711" {
		t.Errorf("loaded\n%+v\nwant\n%+v", got.Environment, env)
	}
	if !got.Environment.Hypervisors[0].FirmwarePending() || got.Environment.Hypervisors[1].FirmwarePending() {
		t.Errorf("pending: %v %v, want the first only", got.Environment.Hypervisors[0].FirmwarePending(), got.Environment.Hypervisors[1].FirmwarePending())
	}

	old := `{"schema_version": 2, "run_id": "old", "started_at": "2026-01-01T00:00:00Z",
		"config": {"cloud": "c", "build_label": "", "expected_path": "asap2", "profiles": [], "duration_seconds": 30, "repeats": 1, "checks": []},
		"environment": {"cloud": "", "build_label": "", "hypervisors": [], "guests": [], "mtu": 1450, "insecure_host_keys": false},
		"profiles": [], "offload": [], "timings": [], "thresholds": [], "errors": []}`
	r, err := Decode([]byte(old))
	if err != nil || r.Environment.Harness != nil || r.Environment.BuildID != "" {
		t.Errorf("a file without identity: %v %+v", err, r)
	}
	bad := strings.Replace(old, `"insecure_host_keys": false`, `"insecure_host_keys": false, "harness": {"version": "", "revision": "abc", "source": "git"}`, 1)
	_, err = Decode([]byte(bad))
	for _, want := range []string{"environment.harness.version: must be set", `environment.harness.source: must be vcs, ldflags or none, got "git"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestHarnessBuildString(t *testing.T) {
	for _, c := range []struct {
		h    HarnessBuild
		want string
	}{
		{HarnessBuild{Version: "(devel)", Revision: "1d40259abcdef0123456789", Modified: true, Time: "2026-05-01T10:00:00Z", Source: HarnessSourceVCS}, "(devel) 1d40259abcde (modified, 2026-05-01T10:00:00Z)"},
		{HarnessBuild{Version: "v1.4.0", Revision: "1d40259", Source: HarnessSourceLDFlags}, "v1.4.0 1d40259"},
		{HarnessBuild{Version: Unknown, Revision: Unknown, Source: HarnessSourceNone}, "unknown, commit unknown (no VCS stamp and no -ldflags override)"},
	} {
		if got := c.h.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.h, got, c.want)
		}
	}
}

// KeepIdentity keeps every identity field: a new field of Environment
// that is recorded at the start must be listed there, or the environment
// rewrite of CollectEnvironment loses it.
func TestKeepIdentityKeepsEveryIdentityField(t *testing.T) {
	old := Environment{Cloud: "c", BuildLabel: "l", BuildID: "b", Harness: &HarnessBuild{Version: "v"}, MTU: 1450, InsecureHostKeys: true,
		NetworkType: "geneve", SegmentationID: "7", ComputeMinMicroversion: "2.1", ComputeMaxMicroversion: "2.95",
		NetworkAPIVersions: []string{"v2.0 CURRENT"}, IdentityAPIVersion: "v3.14 stable", KubernetesServerVersion: "v1.29.4"}
	var env Environment
	KeepIdentity(&env, old)
	if !reflect.DeepEqual(env, old) {
		t.Errorf("kept %+v, want %+v", env, old)
	}
}
