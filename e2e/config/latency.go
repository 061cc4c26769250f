package config

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(130, section{defaults: (*Config).applyLatencyDefaults, validate: (*validator).latency,
		metric: results.IsLatencyMetric, profile: func(v *validator, path, _, id string) { v.oneOf(path, id, results.LatencyProfileIDs()) }}, results.FamilyLatency)
}

// Latency configures the latency profiles (results.LatencyCatalogue):
// sockperf ping-pong at idle and under an iperf3 load, and the first
// packets of fresh flows.
type Latency struct {
	// Profiles are the latency profile ids to run; absent = all, [] = none.
	Profiles []string `yaml:"profiles"`
	// MessageSize is sockperf's -m in bytes (14 .. 65507); default 64.
	MessageSize int `yaml:"message_size"`
	// Duration is sockperf's -t (whole seconds >= 1); default 10s. sockperf
	// measures over it less its 400 ms warm-up and 50 ms cool-down.
	Duration time.Duration `yaml:"duration"`
	// Port is the sockperf server's UDP port; default 11111.
	Port int `yaml:"port"`
	// Grace bounds every latency command past its own length (sockperf -t,
	// a flow's pings); default 10s.
	Grace time.Duration `yaml:"grace"`
	// LoadProfile is the iperf3 profile that loads the pair during
	// lat-load; default tcp-p1.
	LoadProfile string `yaml:"load_profile"`
	// Settle is how long the load runs before sockperf starts; default 3s.
	Settle time.Duration `yaml:"settle"`
	// FirstPacketFlows is how many fresh flows lat-first measures; default 5.
	FirstPacketFlows int `yaml:"first_packet_flows"`
	// FirstPacketPings is how many echoes each flow sends (the first is the
	// miss, the rest the steady state); default 10.
	FirstPacketPings int `yaml:"first_packet_pings"`
	// FirstPacketIdle is the quiet time before each flow: longer than the
	// cloud's OVS other_config:max-idle (10 s by default) so every datapath
	// flow of the pair has expired; default 12s.
	FirstPacketIdle time.Duration `yaml:"first_packet_idle"`
}

// Latency defaults (docs/CONFIG.md, latency).
const (
	DefaultLatencyMessageSize = 64
	DefaultLatencyDuration    = 10 * time.Second
	DefaultLatencyPort        = 11111
	DefaultLatencyGrace       = 10 * time.Second
	DefaultLatencyLoadProfile = "tcp-p1"
	DefaultLatencySettle      = 3 * time.Second
	DefaultFirstPacketFlows   = 5
	DefaultFirstPacketPings   = 10
	DefaultFirstPacketIdle    = 12 * time.Second
	// sockperf's -m range: its header, and one UDP datagram.
	minLatencyMessage, maxLatencyMessage = 14, 65507
)

func (c *Config) applyLatencyDefaults() {
	l := &c.Latency
	if !c.has("latency.profiles") {
		l.Profiles = results.LatencyProfileIDs()
	}
	if !c.has("latency.message_size") {
		l.MessageSize = DefaultLatencyMessageSize
	}
	if !c.has("latency.duration") {
		l.Duration = DefaultLatencyDuration
	}
	if !c.has("latency.port") {
		l.Port = DefaultLatencyPort
	}
	if !c.has("latency.grace") {
		l.Grace = DefaultLatencyGrace
	}
	if !c.has("latency.load_profile") {
		l.LoadProfile = DefaultLatencyLoadProfile
	}
	if !c.has("latency.settle") {
		l.Settle = DefaultLatencySettle
	}
	if !c.has("latency.first_packet_flows") {
		l.FirstPacketFlows = DefaultFirstPacketFlows
	}
	if !c.has("latency.first_packet_pings") {
		l.FirstPacketPings = DefaultFirstPacketPings
	}
	if !c.has("latency.first_packet_idle") {
		l.FirstPacketIdle = DefaultFirstPacketIdle
	}
}

func (v *validator) latency() {
	l := v.c.Latency
	seen := map[string]bool{}
	for i, id := range l.Profiles {
		p := fmt.Sprintf("latency.profiles[%d]", i)
		if seen[id] {
			v.bad(p, "is repeated", id)
		}
		seen[id] = true
		v.oneOf(p, id, results.LatencyProfileIDs())
	}
	if l.MessageSize < minLatencyMessage || l.MessageSize > maxLatencyMessage {
		v.bad("latency.message_size", "must be 14..65507 bytes (sockperf -m: its header .. one UDP datagram)", l.MessageSize)
	}
	v.positiveDuration("latency.duration", l.Duration)
	if l.Duration > 0 && (l.Duration < time.Second || l.Duration%time.Second != 0) {
		v.bad("latency.duration", "must be whole seconds >= 1 (sockperf -t)", l.Duration)
	}
	v.port("latency.port", l.Port)
	v.positiveDuration("latency.grace", l.Grace)
	if slices.Contains(l.Profiles, results.LatencyLoadID) {
		if v.required("latency.load_profile", l.LoadProfile, "an iperf3 profile id, e.g. tcp-p1") {
			v.profile("latency.load_profile", l.LoadProfile)
		}
		if l.Settle < 0 {
			v.bad("latency.settle", "must be >= 0", l.Settle)
		}
		if first, last := v.c.Traffic.IperfPortRange(); l.Port >= first && l.Port <= last {
			v.bad("latency.port", "must not be one of the iperf3 ports of the load (traffic.port "+strconv.Itoa(v.c.Traffic.Port)+" and the next ones)", l.Port)
		}
	}
	if slices.Contains(l.Profiles, results.LatencyFirstID) {
		if l.FirstPacketFlows < 1 {
			v.bad("latency.first_packet_flows", "must be >= 1", l.FirstPacketFlows)
		}
		if l.FirstPacketPings < 2 {
			v.bad("latency.first_packet_pings", "must be >= 2 (the first echo is the miss, the others the steady state)", l.FirstPacketPings)
		}
		v.positiveDuration("latency.first_packet_idle", l.FirstPacketIdle)
	}
}
