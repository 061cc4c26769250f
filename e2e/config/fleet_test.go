package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
)

// fleetFile is testdata/minimal.yaml with cloud.admin set, plus extra.
func fleetFile(t *testing.T, extra string) string {
	t.Helper()
	base, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(base), "  tenant: lab\n", "  tenant: lab\n  admin: lab-admin\n", 1)
	if doc == string(base) {
		t.Fatal("testdata/minimal.yaml has no cloud.tenant line to add cloud.admin after")
	}
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(doc+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestFleetAbsentIsTheSinglePair(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(fleetFile(t, ""), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Fleet != nil {
		t.Errorf("no fleet section, yet Fleet = %+v", cfg.Fleet)
	}
}

func TestFleetDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(fleetFile(t, "fleet:\n  all: true\n"), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := &Fleet{All: true, Pairs: "ring", CloudParallel: 4, Mode: "isolated",
		Outlier: FleetOutlier{Rule: "mad", Threshold: 3.5, MinDrop: 0.05}}
	if !reflect.DeepEqual(cfg.Fleet, want) {
		t.Errorf("defaults %+v\nwant %+v", cfg.Fleet, want)
	}
	if r := cfg.Fleet.Rule(); r != (fleet.Rule{Kind: "mad", Threshold: 3.5, MinDrop: 0.05}) {
		t.Errorf("Rule() = %+v", r)
	}
	cfg, err = Load(fleetFile(t, "fleet:\n  aggregate: asap2\n  outlier:\n    rule: ratio\n"), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Fleet.Outlier; o != (FleetOutlier{Rule: "ratio", Ratio: 0.8}) {
		t.Errorf("ratio defaults %+v", o)
	}
	if s := cfg.Fleet.Source(); s.Aggregate != "asap2" || s.All || len(s.Nodes) != 0 {
		t.Errorf("Source() = %+v", s)
	}
}

func TestFleetExplicit(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(fleetFile(t, `fleet:
  nodes: [c1, c2, c3]
  pairs: explicit
  explicit_pairs:
    - {sender: c1, receiver: c2}
    - {sender: c2, receiver: c3}
    - {sender: c3, receiver: c1}
  cloud_parallel: 2
  mode: concurrent
  shard: 1/1
`), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Fleet.ExplicitPairs; !reflect.DeepEqual(got, []fleet.Pair{{Sender: "c1", Receiver: "c2"}, {Sender: "c2", Receiver: "c3"}, {Sender: "c3", Receiver: "c1"}}) {
		t.Errorf("explicit pairs %v", got)
	}
}

func TestFleetBadValuesAllAtOnce(t *testing.T) {
	fakeHome(t)
	for _, tc := range []struct {
		name, yaml string
		noAdmin    bool
		want       []string
	}{
		{"everything wrong", `placement:
  hosts: [c1, c2]
fleet:
  nodes: [c1, c2, c1, c4, ""]
  aggregate: asap2
  pairs: explicit
  explicit_pairs:
    - {sender: c1, receiver: c1}
    - {sender: c2, receiver: c9}
    - {sender: c4, receiver: c2}
  cloud_parallel: 0
  mode: parallel
  shard: 5/4
  outlier:
    rule: mad
    threshold: 0
    min_drop: 1.5
    ratio: 0.5
`, false, []string{
			`fleet: needs exactly one node source: nodes, availability_zone, aggregate or all: true, got ["nodes" "aggregate"]`,
			`placement.hosts: must be empty with fleet (each pair is pinned to its own nodes), got ["c1" "c2"]`,
		}},
		{"explicit list", `fleet:
  nodes: [c1, c2, c1, c4, ""]
  pairs: explicit
  explicit_pairs:
    - {sender: c1, receiver: c1}
    - {sender: c2, receiver: c9}
    - {sender: c4, receiver: c2}
  cloud_parallel: 0
  mode: parallel
  shard: 5/4
  outlier:
    rule: mad
    threshold: 0
    min_drop: 1.5
    ratio: 0.5
`, false, []string{
			`fleet.nodes[2]: repeats fleet.nodes[0], got "c1"`,
			`fleet.nodes[4]: is empty`,
			`fleet.explicit_pairs[0].receiver: is the pair's sender: a pair needs two nodes, got "c1"`,
			`fleet.explicit_pairs[1].receiver: is not a node of the fleet [c1 c2 c4], got "c9"`,
			`fleet.explicit_pairs: node c4 never receives: every node must send and receive, got "c4"`,
			`fleet.explicit_pairs: node c1 is in no pair: every node must send and receive, got "c1"`, // c1→c1 is refused: it counts for nothing
			`fleet.cloud_parallel: must be >= 1 (pairs provisioned or torn down at once), got 0`,
			`fleet.mode: must be one of isolated, concurrent, got "parallel"`,
			`fleet.shard: must be i/n with 1 <= i <= n, e.g. 2/4, got "5/4"`,
			`fleet.outlier.ratio: is only read with fleet.outlier.rule: ratio, got "mad"`,
			`fleet.outlier.threshold: must be > 0 (a modified z-score; 3.5 is the usual bound), got 0`,
			`fleet.outlier.min_drop: must be in [0, 1) (a fraction of the fleet median), got 1.5`,
		}},
		{"ring with pairs, no admin, one node", `fleet:
  nodes: [c1]
  explicit_pairs:
    - {sender: c1, receiver: c2}
  outlier:
    rule: ratio
    ratio: 1
`, true, []string{
			`fleet.nodes: must name at least 2 hypervisors, got ["c1"]`,
			`fleet.explicit_pairs: is only read with fleet.pairs: explicit, got 1`,
			`fleet.outlier.ratio: must be in (0, 1) (a fraction of the fleet median), got 1`,
			`cloud.admin: is required with fleet`,
		}},
		{"explicit without pairs", "fleet:\n  availability_zone: az1\n  pairs: explicit\n", false, []string{
			`fleet.explicit_pairs: is required with fleet.pairs: explicit`,
		}},
		// The key's old name is refused with its line and the new name,
		// beside the file's other problems.
		{"old key", "fleet:\n  all: true\n  concurrency: 2\n  mode: parallel\n", false, []string{
			`:24: fleet.concurrency: was renamed: write fleet.cloud_parallel (it bounds the pairs provisioned and torn down at once; fleet.mode says whether the pairs' traffic runs concurrently)`,
			`fleet.mode: must be one of isolated, concurrent, got "parallel"`,
		}},
		{"no source", "fleet:\n  mode: isolated\n", false, []string{
			`fleet: needs exactly one node source: nodes, availability_zone, aggregate or all: true, got []`,
		}},
	} {
		file := fleetFile(t, tc.yaml)
		if tc.noAdmin {
			data, _ := os.ReadFile(file)
			if err := os.WriteFile(file, []byte(strings.Replace(string(data), "  admin: lab-admin\n", "", 1)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Load(file, WithGetenv(noEnv))
		var probs Problems
		if !errors.As(err, &probs) {
			t.Fatalf("%s: %v, want Problems", tc.name, err)
		}
		got := err.Error()
		for _, w := range tc.want {
			if !strings.Contains(got, file+": "+w) && !strings.Contains(got, file+w) {
				t.Errorf("%s: problems\n%s\nlack %q", tc.name, got, w)
			}
		}
	}
}

// The example's commented fleet block, uncommented (and placement.hosts
// dropped, as its comment says), loads as documented.
func TestExampleFleetBlockLoads(t *testing.T) {
	fakeHome(t)
	data, err := os.ReadFile("examples/mosk.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, "\n# fleet:\n")
	if i < 0 {
		t.Fatal("examples/mosk.yaml has no commented fleet block")
	}
	block := strings.NewReplacer("\n# ", "\n", "\n#   ", "\n  ").Replace(doc[i:])
	hosts := "  hosts:\n    - cmp-asap2-01.mosk.lab\n    - cmp-asap2-02.mosk.lab\n"
	if !strings.Contains(doc, hosts) {
		t.Fatal("examples/mosk.yaml's placement.hosts changed: update this test")
	}
	doc = strings.Replace(doc[:i], hosts, "", 1) + block
	file := filepath.Join(t.TempDir(), "mosk-fleet.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file, WithGetenv(noEnv), KnownProfiles("tcp-p1", "tcp-p15", "udp-b0-p15"))
	if err != nil {
		t.Fatalf("the example's fleet block:\n%v", err)
	}
	want := &Fleet{Aggregate: "asap2", Pairs: "ring", CloudParallel: 4, Mode: "isolated", Outlier: FleetOutlier{Rule: "mad", Threshold: 3.5, MinDrop: 0.05}}
	if !reflect.DeepEqual(cfg.Fleet, want) {
		t.Errorf("fleet %+v, want %+v", cfg.Fleet, want)
	}
}

// $ASAP2E2E_FLEET_MODE runs one fleet file in either traffic mode; it is
// validated like the key, and refused (named) for a file without a fleet.
func TestFleetModeFromEnvironment(t *testing.T) {
	home := fakeHome(t)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvFleetMode {
				return v
			}
			return ""
		}
	}
	file := fleetFile(t, "fleet:\n  all: true\n")
	cfg, err := Load(file, WithGetenv(env("concurrent")))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Fleet.Mode != FleetConcurrent {
		t.Errorf("mode %q, want concurrent from $%s", cfg.Fleet.Mode, EnvFleetMode)
	}
	_, err = Load(file, WithGetenv(env("together")))
	if err == nil || !strings.Contains(err.Error(), `fleet.mode`) || !strings.Contains(err.Error(), `"together"`) {
		t.Errorf("a bad mode from the environment: %v", err)
	}
	single := fleetFile(t, "")
	_, err = Load(single, WithGetenv(env("isolated")))
	assertMessages(t, err, []string{single + `: fleet.mode (from $ASAP2E2E_FLEET_MODE): needs a fleet section in the file (the run is a single pair), got "isolated"`}, home)
}

// The shard and run group from the environment: ASAP2E2E_FLEET_SHARD
// (1-based i/n), or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX
// (0-based) with ASAP2E2E_FLEET_SHARDS; the environment wins over the
// file; every bad value names its variable and value.
func TestFleetShardFromTheEnvironment(t *testing.T) {
	for _, c := range []struct {
		name       string
		yaml       string // fleet keys added to the file
		env        map[string]string
		shard, grp string
		problems   []string
	}{
		{name: "i/n", env: map[string]string{EnvFleetShard: "2/3", EnvRunGroup: "ci-1"}, shard: "2/3", grp: "ci-1"},
		{name: "indexed job, index 0 is shard 1", env: map[string]string{EnvJobIndex: "0", EnvFleetShards: "4", EnvRunGroup: "job-a"}, shard: "1/4", grp: "job-a"},
		{name: "indexed job, last index", env: map[string]string{EnvJobIndex: "3", EnvFleetShards: "4", EnvRunGroup: "job-a"}, shard: "4/4", grp: "job-a"},
		{name: "JOB_COMPLETION_INDEX alone is not ours", env: map[string]string{EnvJobIndex: "2"}, shard: ""},
		{name: "env wins over the file", yaml: "  shard: 1/2\n  run_group: from-file\n", env: map[string]string{EnvFleetShard: "2/2", EnvRunGroup: "from-env"}, shard: "2/2", grp: "from-env"},
		{name: "file alone", yaml: "  shard: 1/2\n  run_group: from-file\n", shard: "1/2", grp: "from-file"},
		{name: "index out of range", env: map[string]string{EnvJobIndex: "4", EnvFleetShards: "4", EnvRunGroup: "g"},
			problems: []string{`$JOB_COMPLETION_INDEX must be a 0-based index below $ASAP2E2E_FLEET_SHARDS=4 (0..3), got "4"`}},
		{name: "count without index", env: map[string]string{EnvFleetShards: "4", EnvRunGroup: "g"},
			problems: []string{"$ASAP2E2E_FLEET_SHARDS=4 needs $JOB_COMPLETION_INDEX"}},
		{name: "bad count", env: map[string]string{EnvJobIndex: "0", EnvFleetShards: "zero", EnvRunGroup: "g"},
			problems: []string{`$ASAP2E2E_FLEET_SHARDS must be the number of shards, an integer >= 1, got "zero"`}},
		{name: "bad i/n", env: map[string]string{EnvFleetShard: "0/2", EnvRunGroup: "g"},
			problems: []string{`fleet.shard (from $ASAP2E2E_FLEET_SHARD): must be i/n with 1 <= i <= n, e.g. 2/4, got "0/2"`}},
		{name: "both ways at once", env: map[string]string{EnvFleetShard: "1/2", EnvFleetShards: "2", EnvJobIndex: "0", EnvRunGroup: "g"},
			problems: []string{"fleet.shard (from $ASAP2E2E_FLEET_SHARDS): conflicts with $ASAP2E2E_FLEET_SHARD=1/2"}},
		{name: "sharded without a group", env: map[string]string{EnvFleetShard: "1/2"},
			problems: []string{"fleet.run_group: is required with fleet.shard 1/2", "set $ASAP2E2E_RUN_GROUP to one value for all the shards"}},
		{name: "bad group", env: map[string]string{EnvRunGroup: "a/b"},
			problems: []string{`fleet.run_group (from $ASAP2E2E_RUN_GROUP): must be 1 to 40 characters`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeHome(t)
			path := fleetFile(t, "fleet:\n  all: true\n"+c.yaml)
			cfg, err := Load(path, WithGetenv(func(k string) string { return c.env[k] }))
			if len(c.problems) > 0 {
				for _, want := range c.problems {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("error lacks %q:\n%v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Fleet.Shard != c.shard || cfg.Fleet.RunGroup != c.grp {
				t.Errorf("shard %q group %q, want %q %q", cfg.Fleet.Shard, cfg.Fleet.RunGroup, c.shard, c.grp)
			}
		})
	}
	// Without a fleet section the variables are refused, named.
	fakeHome(t)
	_, err := Load(fleetFile(t, ""), WithGetenv(func(k string) string { return map[string]string{EnvRunGroup: "g"}[k] }))
	if err == nil || !strings.Contains(err.Error(), "fleet.run_group (from $ASAP2E2E_RUN_GROUP): needs a fleet section") {
		t.Errorf("group without a fleet: %v", err)
	}
}
