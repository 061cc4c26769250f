package config_test

import (
	"path/filepath"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
)

// TestLabTCPProfilesInOneProcess: in every lab config, each multi-stream TCP
// profile runs its streams in one iperf3 process under Debian 12's iperf3
// 3.12 (single-threaded), so that every stream is connected before any of
// them sends. Split over processes, each began its test when its own set-up
// was done, and on a loaded lab the first ones filled the userspace datapath
// while the last still sent its parameters: its control connection was
// aborted 5 s later by --snd-timeout (make lab, 2026-12-06; lab/harness.yaml
// says more).
func TestLabTCPProfilesInOneProcess(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "lab", "harness*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no lab/harness*.yaml (%v)", err)
	}
	v312 := iperf3.Version{Major: 3, Minor: 12}
	checked := 0
	for _, p := range paths {
		name := filepath.Base(p)
		cfg := config.LoadLab(t, name)
		ids := cfg.Traffic.Profiles
		if len(ids) == 0 { // empty: the whole catalogue
			for _, pr := range iperf3.Catalogue() {
				ids = append(ids, pr.ID)
			}
		}
		for _, id := range ids {
			pr, ok := iperf3.Lookup(id)
			if !ok {
				t.Errorf("lab/%s: traffic profile %q is not in the catalogue", name, id)
				continue
			}
			if pr.Protocol != iperf3.TCP || pr.Streams < 2 {
				continue
			}
			checked++
			split, _ := iperf3.SplitStreams(pr.Streams, cfg.Traffic.MaxStreamsPerProcess, cfg.Flavor.VCPUs, v312)
			if len(split) != 1 {
				t.Errorf("lab/%s: %s runs in %d iperf3 3.12 processes (traffic.max_streams_per_process %d, %d vCPUs), want 1",
					name, id, len(split), cfg.Traffic.MaxStreamsPerProcess, cfg.Flavor.VCPUs)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no lab config runs a multi-stream TCP profile: this test checks nothing")
	}
}
