package plan

import (
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/sockperf"
)

func init() {
	families.Register(60, family{budget: func(cfg *config.Config, _, _ time.Duration, add adder) {
		if d, rule := latencyBudget(cfg); d > 0 {
			add("measure latency", d, "%s", rule)
		}
	}}, results.FamilyLatency)
}

// latencyBudget is the longest the selected latency profiles can take, and
// the rule that gives it (RunBudget).
func latencyBudget(cfg *config.Config) (time.Duration, string) {
	l, listen, cmd := cfg.Latency, cfg.Interval(config.IntervalIperfServer).Timeout, cfg.Interval(config.IntervalCommand).Timeout
	var total time.Duration
	var rules []string
	for _, p := range SelectedLatency(cfg) {
		switch p.Kind {
		case results.LatencyPingPong:
			// twice the ping-pong: once more after a message lost in its warm-up (sockperf.Run)
			total += 2*cmd + listen + 2*(l.Duration+l.Grace)
			rules = append(rules, p.ID+": 2 × command (versions) + iperf_server + 2 × (latency.duration + latency.grace)")
		case results.LatencyUnderLoad:
			load := LoadDuration(l)
			total += 2*cmd + listen + l.Duration + l.Grace + 2*cmd + listen + load + listen
			rules = append(rules, p.ID+": sockperf's + the load's (iperf3 -t latency.settle + latency.duration + latency.grace, + iperf_server)")
		case results.LatencyFirstPacket:
			flow := l.FirstPacketIdle + time.Duration(l.FirstPacketPings-1)*sockperf.PingInterval + sockperf.PingReplyWait + l.Grace
			total += cmd + time.Duration(l.FirstPacketFlows)*flow
			rules = append(rules, p.ID+": command + first_packet_flows × (first_packet_idle + the pings + latency.grace)")
		}
	}
	return total, strings.Join(rules, "; ")
}
