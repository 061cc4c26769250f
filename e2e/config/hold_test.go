package config

import (
	"testing"
	"time"
)

// Absent = neither profile; present, every knob has its default.
func TestHoldDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(latencyFile(t, "rule_scale:\n  counts: [1000, 10000]\nchurn:\n  duration: 120s\n"), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	r, c := cfg.RuleScale, cfg.Churn
	if r.Rate != 0 || r.Hold != 20*time.Second || r.Refresh != 2*time.Second || r.FirstSourcePort != 20000 ||
		r.PlateauSamples != 3 || r.PlateauGrowth != 0.01 || r.HardwareShare != 0.97 || r.VswitchdLog != DefaultVswitchdLog {
		t.Errorf("rule_scale defaults %+v", r)
	}
	if c.Duration != 120*time.Second || c.Bitrate != 10_000_000 || c.Length != 1000 || c.SlowPathShare != 0.01 || c.SlowPathPeriod != 10*time.Second || c.FlowPPS() != 1250 {
		t.Errorf("churn defaults %+v", c)
	}
	if iv := cfg.Interval(IntervalChurnSample); iv.Poll != 10*time.Second {
		t.Errorf("intervals.churn_sample %+v", iv)
	}
	cfg, err = Load(latencyFile(t, ""), WithGetenv(noEnv))
	if err != nil || len(cfg.RuleScale.Counts) != 0 || cfg.Churn.Duration != 0 {
		t.Errorf("absent: %+v %+v %v", cfg.RuleScale, cfg.Churn, err)
	}
}

// Every problem of both sections at once, each with its key and value.
func TestHoldBadValues(t *testing.T) {
	home := fakeHome(t)
	file := latencyFile(t, `traffic:
  port: 25000
intervals:
  churn_sample: {timeout: 10s, poll: 10s}
rule_scale:
  counts: [0, 10000, 10000, 40001]
  rate: -5
  hold: 2s
  refresh: 10s
  first_source_port: 20000
  plateau_samples: 0
  plateau_growth: 1
  hardware_share: 0
churn:
  duration: 15500ms
  bitrate: 0
  length: 8
  slow_path_share: 1
  slow_path_period: 500ms
thresholds:
  - {name: a, profile: rule-scale-5, path: asap2, metric: rules_per_second, op: ">=", value: 1000}
  - {name: b, profile: churn, path: asap2, metric: churn_count, op: "<=", value: 0.5}
`)
	_, err := Load(file, WithGetenv(noEnv))
	assertMessages(t, err, []string{
		file + `: thresholds[0].profile: must name a profile this config runs for rules_per_second ([rule-scale-10000]), got "rule-scale-5"`,
		file + ": thresholds[1].value: must be a whole number >= 0 for churn_count (rules deleted and re-added), got 0.5",
		file + ": rule_scale.counts[0]: must be 1..40000 (distinct UDP source ports), got 0",
		file + ": rule_scale.counts[2]: is repeated, got 10000",
		file + ": rule_scale.counts[3]: must be 1..40000 (distinct UDP source ports), got 40001",
		file + ": rule_scale.rate: must be >= 0 new 5-tuples a second (0 = as fast as the guest opens them), got -5",
		file + ": rule_scale.refresh: must be > 0 and below 10s (OVS's max-idle: a flow not sent again within it is removed), got 10s",
		file + ": rule_scale.first_source_port: the source ports 20000..29999 must not contain traffic.port 25000 (the receiver's port), got 20000",
		file + ": rule_scale.plateau_samples: must be >= 1, got 0",
		file + ": rule_scale.plateau_growth: must be in (0, 1) (0.01 = growth below 1 % is a plateau), got 1",
		file + ": rule_scale.hardware_share: must be in (0, 1] (0.97 = 97 % of the final count in hardware), got 0",
		file + ": churn.duration: must be whole seconds >= 0 (iperf3 -t; 0 = no churn window), got 15.5s",
		file + ": churn.bitrate: must be > 0 bit/s (the steady flow is capped: its packet rate is what the slow path's share is of), got 0",
		file + ": churn.length: must be 16..65507 bytes (iperf3 -l of a UDP datagram), got 8",
		file + ": churn.slow_path_share: must be in (0, 1) (0.01 = 1 % of the flow's packets per period on the representor), got 1",
		file + ": churn.slow_path_period: must be >= 1s, got 500ms",
		file + ": churn.duration: must hold at least two reads (2 × intervals.churn_sample.poll 10s), got 15.5s",
	}, home)
}

// TestLabHoldVariant: lab/harness-hold.yaml is lab/harness.yaml with issue 38's
// profiles on (failover, aging, fragments, rule scale at 1000 and 10000, a
// 2-minute churn window) and its build label saying so, nothing else changed.
func TestLabHoldVariant(t *testing.T) {
	base, variant := loadLab(t, "harness.yaml"), loadLab(t, "harness-hold.yaml")
	if len(base.RuleScale.Counts) != 0 || base.Churn.Duration != 0 || base.Failover.Enabled || base.Aging.Enabled || base.Fragments.Enabled {
		t.Errorf("lab/harness.yaml runs issue 38's profiles (failover takes a bond leg down: keep them in the variant): rule_scale %+v churn %+v failover %v aging %v fragments %v",
			base.RuleScale, base.Churn, base.Failover.Enabled, base.Aging.Enabled, base.Fragments.Enabled)
	}
	if c := variant.RuleScale.Counts; len(c) != 2 || c[0] != 1000 || c[1] != 10000 || variant.Churn.Duration != 120*time.Second {
		t.Errorf("lab/harness-hold.yaml: rule_scale %+v churn %+v", variant.RuleScale, variant.Churn)
	}
	f := variant.Failover
	if !f.Enabled || f.Hypervisor != FailoverSource || f.Bond != "" || f.Member != "" || f.DownCommand != DefaultFailoverDownCommand || f.RestoreCommand != DefaultFailoverRestoreCommand {
		t.Errorf("failover %+v: want the discovered bond's active leg, ip link set", f)
	}
	if !variant.Aging.Enabled || !variant.Fragments.Enabled {
		t.Errorf("aging %v, fragments %v: want both on", variant.Aging.Enabled, variant.Fragments.Enabled)
	}
	if n, why := variant.Fragments.FragmentLength(variant.Network.MTU); why != "" || n != 9950 {
		t.Errorf("lab/harness-hold.yaml: fragment length %d on MTU %d: %s", n, variant.Network.MTU, why)
	}
	variant.RuleScale, variant.Churn, variant.Failover, variant.Aging, variant.Fragments = base.RuleScale, base.Churn, base.Failover, base.Aging, base.Fragments
	if a, b := redactedWithout(base, "build_label"), redactedWithout(variant, "build_label"); a != b {
		t.Errorf("the variant differs from lab/harness.yaml beyond issue 38's sections:\n--- harness.yaml\n%s\n--- harness-hold.yaml\n%s", a, b)
	}
}
