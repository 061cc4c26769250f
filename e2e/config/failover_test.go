package config

import (
	"reflect"
	"testing"
	"time"
)

// Absent or disabled = no failover profile; enabled, every default.
func TestFailoverDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(latencyFile(t, ""), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Failover.Enabled {
		t.Error("absent section: enabled")
	}
	cfg, err = Load(latencyFile(t, "failover:\n  enabled: true\n"), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := Failover{Enabled: true, Hypervisor: FailoverSource, DownCommand: "ip link set {member} down", RestoreCommand: "ip link set {member} up",
		DownAt: 3 * time.Second, RestoreAt: 8 * time.Second, Duration: 13 * time.Second, BitrateBps: 200_000_000, Length: 1200,
		ReportInterval: 100 * time.Millisecond, ReoffloadWait: time.Minute, EvidenceFlow: 12 * time.Second}
	if !reflect.DeepEqual(cfg.Failover, want) {
		t.Errorf("got %+v, want %+v", cfg.Failover, want)
	}
}

// Every problem of the section at once, each with its key and value.
func TestFailoverBadValues(t *testing.T) {
	home := fakeHome(t)
	file := latencyFile(t, `failover:
  enabled: true
  hypervisor: sender
  bond: "bond 0"
  member: eth0/1
  down_command: "ip link set {port} down"
  restore_command: " "
  down_at: 0s
  restore_at: 12950ms
  duration: 13s
  bitrate: 1000
  length: 8
  report_interval: 50ms
  reoffload_wait: 0s
  evidence_flow: 4s
  outage_goal_ms: -1
`)
	_, err := Load(file, WithGetenv(noEnv))
	assertMessages(t, err, []string{
		file + `: failover.hypervisor: must be one of source, destination, got "sender"`,
		file + `: failover.bond: must be an interface name (1..15 of letters, digits, _ . : @ -) or empty (discovered), got "bond 0"`,
		file + `: failover.member: must be an interface name (1..15 of letters, digits, _ . : @ -) or empty (discovered), got "eth0/1"`,
		file + `: failover.down_command: names {port}, which is not one of [{member} {bond}], got "ip link set {port} down"`,
		file + `: failover.restore_command: must be a command (default ip link set {member} up)`,
		file + `: failover.down_at: must be > 0 (the flow runs before the member goes down), got 0s`,
		file + `: failover.restore_at: must leave at least one report interval (50ms) of failover.duration (13s) after it: the flow must be seen coming back, got 12.95s`,
		file + `: failover.length: must be 16..65507 (UDP payload bytes, iperf3 -l), got 8`,
		file + `: failover.report_interval: must be >= 100ms (iperf3's least -i), got 50ms`,
		file + `: failover.reoffload_wait: must be >= 1s (the bound on the wait until the pair's flows are in hardware again), got 0s`,
		file + `: failover.evidence_flow: must be longer than offload.settle + offload.capture_window (8s): the checks run inside it, got 4s`,
		file + `: failover.outage_goal_ms: must be >= 0 (0 = the bond's own bound: miimon + downdelay + 100 ms), got -1`,
	}, home)
}

func TestFailoverCommand(t *testing.T) {
	for _, c := range []struct{ tmpl, bond, member, want string }{
		{DefaultFailoverDownCommand, "bond0", "enp1s0f0np0", "ip link set enp1s0f0np0 down"},
		{"ssh tor 'shut {member}' # {bond}", "bond0", "e th'1", `ssh tor 'shut 'e th'\''1'' # bond0`},
		{"true", "b", "m", "true"},
	} {
		if got := FailoverCommand(c.tmpl, c.bond, c.member); got != c.want {
			t.Errorf("FailoverCommand(%q) = %q, want %q", c.tmpl, got, c.want)
		}
	}
}
