package history

import "github.com/mosk-qa/asap2-e2e/e2e/results"

// The latency profiles' series, per profile and pair: sockperf's
// percentiles (µs).
const (
	MetricLatencyP50  = "latency_p50_us"
	MetricLatencyP99  = "latency_p99_us"
	MetricLatencyP999 = "latency_p99_9_us"
)

func init() {
	Metrics[MetricLatencyP50] = Metric{Name: MetricLatencyP50, MinEffect: 0.10}
	Metrics[MetricLatencyP99] = Metric{Name: MetricLatencyP99, MinEffect: 0.15}
	Metrics[MetricLatencyP999] = Metric{Name: MetricLatencyP999, MinEffect: 0.20}
	families.Register(20, latencyPoints, results.FamilyLatency)
}

// latencyPoints are each latency profile's percentiles, on the pair.
func latencyPoints(r *results.Results, pair string, add adder) {
	for _, l := range r.Latency {
		for _, q := range []struct {
			m string
			v float64
		}{{MetricLatencyP50, l.P50Us}, {MetricLatencyP99, l.P99Us}, {MetricLatencyP999, l.P999Us}} {
			if q.v > 0 {
				add(q.m, l.ID, l.Path, pair, q.v, q.v, q.v, 1)
			}
		}
	}
}
