package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Absent = neither profile; the defaults are the kernel's flowtable
// timeout, a 5 s margin, a 10 Mbit/s flow from port 41000, a 10 s restart,
// 10 Mbit/s of fragments at the MTU + 1000.
func TestAgingDefaults(t *testing.T) {
	fakeHome(t)
	cfg, err := Load(latencyFile(t, ""), WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := Aging{RestartDuration: 10 * time.Second, Bitrate: 10_000_000, ClientPort: 41000, FlowtableTimeout: 30 * time.Second, IdleMargin: 5 * time.Second}
	if !reflect.DeepEqual(cfg.Aging, want) || cfg.Fragments != (Fragments{Bitrate: 10_000_000}) {
		t.Errorf("aging %+v, fragments %+v", cfg.Aging, cfg.Fragments)
	}
	if iv := cfg.Interval(IntervalAgingSample); iv.Poll != 200*time.Millisecond || iv.Timeout != 10*time.Second {
		t.Errorf("intervals.aging_sample default %+v", iv)
	}
	for _, c := range []struct {
		length, mtu, want int
		fragments         bool
	}{{0, 1450, 2450, true}, {0, 8950, 9950, true}, {0, 65000, 65507, true}, {1400, 1450, 1400, false}, {1423, 1450, 1423, true}, {1422, 1450, 1422, false}} {
		n, why := Fragments{Length: c.length}.FragmentLength(c.mtu)
		if n != c.want || (why == "") != c.fragments {
			t.Errorf("length %d on MTU %d: %d %q", c.length, c.mtu, n, why)
		}
	}
}

// Every problem of both sections at once, each with its key and value.
func TestAgingBadValues(t *testing.T) {
	home := fakeHome(t)
	file := latencyFile(t, `intervals:
  aging_sample: {timeout: 300ms, poll: 200ms}
aging:
  enabled: true
  restart_duration: 1500ms
  bitrate: 0
  client_port: 5205
  flowtable_timeout: 0s
  idle_margin: 500ms
fragments:
  enabled: true
  length: 70000
  bitrate: -5
`)
	_, err := Load(file, WithGetenv(noEnv))
	assertMessages(t, err, []string{
		file + ": aging.restart_duration: must be whole seconds >= 2 (iperf3 -t of the restart: the re-install is read while it runs), got 1.5s",
		file + ": aging.bitrate: must be > 0 bit/s (iperf3 -b: a flow to age, not a load), got 0",
		file + ": aging.client_port: must not be one of the iperf3 server ports (traffic.port 5201 .. 5280), got 5205",
		file + ": aging.flowtable_timeout: must be > 0 (the kernel's NF_FLOW_TIMEOUT is 30s), got 0s",
		file + ": aging.idle_margin: must be >= 1s (OVS's revalidator deletes an idle flow at its next pass after max-idle), got 500ms",
		file + ": intervals.aging_sample.timeout: must be at least twice its poll (200ms): the re-install is judged over two dumps, got 300ms",
		file + ": aging.enabled: needs dpctl in offload.checks: the profile reads the pair's datapath flows, got []",
		file + ": fragments.length: must be 0 (the network's MTU + 1000) or 1..65507 bytes (iperf3 -l), got 70000",
		file + ": fragments.bitrate: must be > 0 bit/s (iperf3 -b), got -5",
		file + ": fragments.enabled: needs tc or dpctl in offload.checks: only they tell a fragment's flow from an unfragmented one, got []",
	}, home)
	if err != nil && strings.Contains(err.Error(), "aging.restart_duration: must be at least") {
		t.Errorf("a restart shorter than the timeline said twice: %v", err)
	}
}

// A length that fits in network.mtu is refused before anything is built.
func TestFragmentsLengthAgainstMTU(t *testing.T) {
	home := fakeHome(t)
	base, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(base), "  cidr: 198.18.10.0/24\n", "  cidr: 198.18.10.0/24\n  mtu: 1500\n", 1) + "fragments:\n  length: 1400\n"
	file := filepath.Join(t.TempDir(), "frag.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(file, WithGetenv(noEnv))
	assertMessages(t, err, []string{
		file + ": fragments.length: must exceed network.mtu less 28: fragments.length 1400 fits in the network's MTU 1500 (1472 bytes of UDP payload): the datagrams would not fragment, got 1400",
	}, home)
}
