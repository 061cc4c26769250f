package config

import (
	"os"
	"testing"
	"time"
)

// traffic.stall_timeout, udp_setup_retries, udp_setup_backoff (issue 14):
// defaults, an explicit 0 kept, and every bad value named with its reason.
func TestIperf3GuardAndRetryKeys(t *testing.T) {
	fakeHome(t)
	minimal, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	load := func(extra string) (*Config, error) {
		cfg, err := Parse("inline.yaml", append(append([]byte(nil), minimal...), extra...))
		if err != nil {
			return nil, err
		}
		return cfg, cfg.Validate(WithGetenv(noEnv))
	}
	cfg, err := load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Traffic.StallTimeout != 5*time.Second || cfg.Traffic.UDPSetupRetries != 2 || cfg.Traffic.UDPSetupBackoff != 2*time.Second {
		t.Errorf("defaults: stall %s, retries %d, back-off %s", cfg.Traffic.StallTimeout, cfg.Traffic.UDPSetupRetries, cfg.Traffic.UDPSetupBackoff)
	}
	cfg, err = load("traffic: {stall_timeout: 0s, udp_setup_retries: 0, udp_setup_backoff: 0s}\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Traffic.StallTimeout != 0 || cfg.Traffic.UDPSetupRetries != 0 || cfg.Traffic.UDPSetupBackoff != 0 {
		t.Errorf("explicit zeros not kept: %+v", cfg.Traffic)
	}
	_, err = load("traffic: {stall_timeout: 50ms, udp_setup_retries: -1, udp_setup_backoff: -1s}\n")
	assertMessages(t, err, []string{
		"inline.yaml: traffic.stall_timeout: must be 0 (no guard) or at least 100ms (iperf3's smallest --rcv-timeout), got 50ms",
		"inline.yaml: traffic.udp_setup_retries: must be >= 0 (0 = never run a UDP test again), got -1",
		"inline.yaml: traffic.udp_setup_backoff: must be >= 0, got -1s",
	}, "")
	_, err = load("traffic: {stall_timeout: 1500500us}\n")
	assertMessages(t, err, []string{
		"inline.yaml: traffic.stall_timeout: must be whole milliseconds (iperf3 --rcv-timeout and --snd-timeout take ms), got 1.5005s",
	}, "")
	_, err = load("traffic: {stall_timeout: 10s}\nintervals: {iperf_server: {timeout: 10s}}\n")
	assertMessages(t, err, []string{
		"inline.yaml: traffic.stall_timeout: must be shorter than intervals.iperf_server.timeout (10s): the harness cuts an iperf3 client at -t + -O + that timeout, and iperf3 must give up on a silent peer first, with its own error, got 10s",
	}, "")
}
