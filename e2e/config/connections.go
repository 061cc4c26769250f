package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(180, section{defaults: (*Config).applyConnectionsDefaults, validate: (*validator).connections,
		metric: results.IsConnectionMetric, profile: (*validator).connectionProfile}, results.FamilyConnections)
}

// Connections is the connection-scale profile (issue 22): N concurrent TCP
// connections between the pair for each N in Counts, the hypervisors'
// conntrack tables sampled (data_port.port_security true) during iperf3's
// omit period only. Absent or Counts empty = no connection-scale profile.
type Connections struct {
	// Counts are the N to open, each 1..MaxConnections, in any order.
	Counts []int `yaml:"counts"`
	// Duration is the measured part (iperf3 -t, whole seconds >= 1);
	// default 10s.
	Duration time.Duration `yaml:"duration"`
	// OffloadWait is iperf3's omit period (-O, whole seconds >= 1): the
	// seconds the tables are sampled in, left out of the numbers; default 10s.
	OffloadWait time.Duration `yaml:"offload_wait"`
	// BitratePerConnection is iperf3 -b for each connection (bit/s; iperf3
	// applies -b to every stream alone); 0 = unlimited (the default). A cap
	// keeps thousands of connections from being a CPU test of the guests:
	// N × the cap is what the pair is offered.
	BitratePerConnection int64 `yaml:"bitrate_per_connection"`
}

const (
	// StreamsPerProcess is iperf3's MAX_STREAMS (src/iperf.h, 128): the
	// most -P one process takes. N connections run as ceil(N/128) client
	// processes on consecutive server ports from traffic.port.
	StreamsPerProcess = 128
	// MaxConnections is what the iperf3 ports the data security group
	// admits carry: IperfPorts processes of StreamsPerProcess streams.
	MaxConnections = IperfPorts * StreamsPerProcess

	DefaultConnectionsDuration    = 10 * time.Second
	DefaultConnectionsOffloadWait = 10 * time.Second
)

// ConnectionProcesses is how many iperf3 processes carry n connections.
func ConnectionProcesses(n int) int { return (n + StreamsPerProcess - 1) / StreamsPerProcess }

func (c *Config) applyConnectionsDefaults() {
	if !c.has("connections.duration") {
		c.Connections.Duration = DefaultConnectionsDuration
	}
	if !c.has("connections.offload_wait") {
		c.Connections.OffloadWait = DefaultConnectionsOffloadWait
	}
}

func (v *validator) connections() {
	cs := v.c.Connections
	seen := map[int]bool{}
	most := 0
	for i, n := range cs.Counts {
		p := fmt.Sprintf("connections.counts[%d]", i)
		switch {
		case n < 1 || n > MaxConnections:
			v.bad(p, fmt.Sprintf("must be 1..%d (%d iperf3 processes of %d streams, the ports the data security group admits)", MaxConnections, IperfPorts, StreamsPerProcess), n)
		case seen[n]:
			v.bad(p, "is repeated", n)
		default:
			most = max(most, n)
		}
		seen[n] = true
	}
	if cs.BitratePerConnection < 0 {
		v.bad("connections.bitrate_per_connection", "must be >= 0 bit/s (0 = unlimited)", cs.BitratePerConnection)
	}
	if len(cs.Counts) == 0 {
		return
	}
	if cs.Duration < time.Second || cs.Duration%time.Second != 0 {
		v.bad("connections.duration", "must be whole seconds >= 1 (iperf3 -t)", cs.Duration)
	}
	if cs.OffloadWait < time.Second || cs.OffloadWait%time.Second != 0 {
		v.bad("connections.offload_wait", "must be whole seconds >= 1 (iperf3 -O: the tables are sampled in it)", cs.OffloadWait)
	}
	if p := v.c.Traffic.Port; p >= 1 && p <= 65535 && p+ConnectionProcesses(most)-1 > 65535 {
		v.bad("traffic.port", fmt.Sprintf("must leave room for the %d iperf3 ports of connections.counts %d: at most %d", ConnectionProcesses(most), most, 65535-ConnectionProcesses(most)+1), p)
	}
	if iv := v.c.Intervals[IntervalConntrackSample]; cs.OffloadWait > 0 && iv.Poll >= cs.OffloadWait {
		v.bad("connections.offload_wait", fmt.Sprintf("must be longer than intervals.%s.poll (%s): the tables are read every poll within it", IntervalConntrackSample, iv.Poll), cs.OffloadWait)
	}
}

// connectionProfile checks a threshold on the connection-scale profile: it
// names connections-<N> for an N of connections.counts, and only that
// profile has the metric.
func (v *validator) connectionProfile(path, metric, id string) {
	var ids []string
	for _, n := range v.c.Connections.Counts {
		ids = append(ids, results.ConnectionProfileID(n))
	}
	if !slices.Contains(ids, id) {
		v.bad(path, fmt.Sprintf("must name a connection-scale profile this config runs for %s (connections-<N> for N in connections.counts: %v)", metric, ids), id)
	}
}
