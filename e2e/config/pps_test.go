package config

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestPPSDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Load("testdata/minimal.yaml", WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.PPS.Search
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"pps.profiles", cfg.PPS.Profiles, DefaultPPSProfiles},
		{"pps.search.length", s.LengthBytes, 64},
		{"pps.search.streams", s.Streams, 1},
		{"pps.search.loss_percent", s.LossPercent, 0.0},
		{"pps.search.pdr_loss_percent", s.PDRLossPercent, 0.5},
		{"pps.search.max_trials", s.MaxTrials, 12},
		{"pps.search.trial_duration", s.TrialDuration, 10 * time.Second},
		{"pps.search.resolution_percent", s.ResolutionPercent, 1.0},
		{"pps.search.upper_bps", s.UpperBps, 0.0},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.what, c.got, c.want)
		}
	}
	ids := []string{}
	for _, x := range s.Searches() {
		ids = append(ids, x.ID)
	}
	if !reflect.DeepEqual(ids, []string{"ndr-p1-l64", "pdr-p1-l64"}) {
		t.Errorf("searches %v", ids)
	}
}

func TestPPSBadValues(t *testing.T) {
	home := fakeHome(t)
	_, err := Load(filepath.Join("testdata", "pps_bad.yaml"), WithGetenv(noEnv),
		KnownProfiles("tcp-p1", "udp-b0-p1-l64"), KnownPPSProfiles("udp-b0-p1-l64", "udp-b0-p15-l64"))
	assertMessages(t, err, []string{
		`testdata/pps_bad.yaml: thresholds[0].profile: must name a ndr_bps search this config runs ([ndr-p0-l8]; from pps.search.streams, length and pdr_loss_percent), got "ndr-p4-l64"`,
		`testdata/pps_bad.yaml: pps.profiles[1]: is not a small-packet profile (known: [udp-b0-p1-l64 udp-b0-p15-l64]), got "tcp-p1"`,
		`testdata/pps_bad.yaml: pps.profiles[2]: is repeated, got "udp-b0-p1-l64"`,
		`testdata/pps_bad.yaml: pps.search.length: must be 16..65507 (UDP payload bytes, iperf3 -l), got 8`,
		`testdata/pps_bad.yaml: pps.search.streams: must be 1..128 (iperf3 -P), got 0`,
		`testdata/pps_bad.yaml: pps.search.pdr_loss_percent: must be above pps.search.loss_percent (1) or 0, got 0.5`,
		`testdata/pps_bad.yaml: pps.search.max_trials: must be >= 3 (with upper_bps -1: the unlimited trial, a probe and a verification), got 2`,
		`testdata/pps_bad.yaml: pps.search.trial_duration: must be whole seconds >= 1s (iperf3 -t), got 1.5s`,
		`testdata/pps_bad.yaml: pps.search.resolution_percent: must be > 0 and < 100 (a share of the upper bound), got 0`,
		`testdata/pps_bad.yaml: pps.search.upper_bps: must be >= 0 (0 = from an unlimited first trial), got -1`,
	}, home)
}
