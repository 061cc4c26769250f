package results

import (
	"fmt"
	"math"
	"time"
)

// The family's id (its config section's key) and its results.
const (
	FamilyLatency = "latency"
)

func init() {
	Families.Register(10, Family{Key: "latency", Validate: validateLatency}, FamilyLatency)
}

// Latency profile kinds.
const (
	LatencyPingPong    = "ping-pong"    // sockperf ping-pong with the pair otherwise idle
	LatencyUnderLoad   = "under-load"   // sockperf ping-pong while an iperf3 flow runs between the same guests
	LatencyFirstPacket = "first-packet" // the first echo of fresh flows (after an idle gap) vs their later echoes
)

// Latency threshold metrics (microseconds, round trip; "<=" is their
// natural op). The first-packet ones read LatencyResult.First.
const (
	MetricLatencyP50       = "latency_p50_us"
	MetricLatencyP99       = "latency_p99_us"
	MetricLatencyP999      = "latency_p99_9_us"
	MetricLatencyMax       = "latency_max_us"
	MetricFirstPacketP50   = "first_packet_p50_us" // median over flows of the first echo's round trip
	MetricFirstPacketMax   = "first_packet_max_us"
	MetricFirstPacketRatio = "first_packet_ratio" // first-echo median / steady-state p50 (1.0 = no miss cost)
)

// LatencyMetrics are the threshold metrics a LatencyResult answers.
func LatencyMetrics() []string {
	return []string{MetricLatencyP50, MetricLatencyP99, MetricLatencyP999, MetricLatencyMax,
		MetricFirstPacketP50, MetricFirstPacketMax, MetricFirstPacketRatio}
}

// IsLatencyMetric reports whether metric is read from Results.Latency.
func IsLatencyMetric(metric string) bool {
	for _, m := range LatencyMetrics() {
		if m == metric {
			return true
		}
	}
	return false
}

// LatencyResult is one latency profile on one path. Every time is a round
// trip in microseconds (sockperf --full-rtt; ping).
type LatencyResult struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"` // LatencyPingPong | LatencyUnderLoad | LatencyFirstPacket
	Path Path   `json:"path"`
	// Tool is what measured it, with its version ("sockperf 3.7-no.git").
	Tool      string    `json:"tool,omitempty"`
	Protocol  string    `json:"protocol,omitempty"` // udp | icmp
	StartedAt time.Time `json:"started_at,omitzero"`
	// MessageBytes is sockperf's -m (ping: 56, its default payload).
	MessageBytes int `json:"message_bytes"`
	// DurationSeconds is what was asked (-t); RunTimeSeconds the valid
	// window sockperf measured over (its warm-up excluded).
	DurationSeconds float64 `json:"duration_seconds"`
	RunTimeSeconds  float64 `json:"run_time_seconds,omitempty"`
	// Samples is the number of round trips behind the percentiles.
	Samples      int64   `json:"samples"`
	SentMessages int64   `json:"sent_messages,omitempty"`
	P50Us        float64 `json:"p50_us,omitempty"`
	P99Us        float64 `json:"p99_us,omitempty"`
	P999Us       float64 `json:"p99_9_us,omitempty"`
	MaxUs        float64 `json:"max_us,omitempty"`
	MinUs        float64 `json:"min_us,omitempty"`
	AvgUs        float64 `json:"avg_us,omitempty"`
	Dropped      int64   `json:"dropped,omitempty"`
	Duplicated   int64   `json:"duplicated,omitempty"`
	OutOfOrder   int64   `json:"out_of_order,omitempty"`
	// Load is the throughput flow of an under-load profile, measured by
	// iperf3 beside the latency window.
	Load *LatencyLoad `json:"load,omitempty"`
	// First is the first-packet profile's outcome.
	First        *FirstPacket `json:"first_packet,omitempty"`
	EvidenceFile string       `json:"evidence_file,omitempty"`
	Warnings     []string     `json:"warnings,omitempty"`
	// OVSDrops is what each hypervisor's ovs-vswitchd counted as dropped
	// during the ping-pong (ovsdrops.go); absent when not read (and for the
	// under-load and first-packet profiles).
	OVSDrops []OVSDrops `json:"ovs_drops,omitempty"`
	// Error is set when the profile failed; its numbers are then not used.
	Error string `json:"error,omitempty"`
}

// LatencyLoad is the load of an under-load profile.
type LatencyLoad struct {
	Profile         string  `json:"profile"` // iperf3 profile id, e.g. tcp-p1
	DurationSeconds float64 `json:"duration_seconds"`
	SettleSeconds   float64 `json:"settle_seconds"`
	DeliveredBps    float64 `json:"delivered_bps"`
	OfferedBps      float64 `json:"offered_bps"`
	LossPercent     float64 `json:"loss_percent,omitempty"`
	Retransmits     int64   `json:"retransmits,omitempty"`
	EvidenceFile    string  `json:"evidence_file,omitempty"` // the load's raw iperf3 -J output(s)
	Error           string  `json:"error,omitempty"`
}

// FirstPacket is the first echo of each fresh flow against the later ones.
type FirstPacket struct {
	Flows          int     `json:"flows"`
	IdleGapSeconds float64 `json:"idle_gap_seconds"`
	// FirstUs is each flow's first round trip; nil where it got no reply.
	FirstUs       []*float64 `json:"first_us"`
	FirstLost     int        `json:"first_lost"`
	FirstMedianUs float64    `json:"first_median_us"`
	FirstMaxUs    float64    `json:"first_max_us"`
	SteadyP50Us   float64    `json:"steady_p50_us"`
	SteadySamples int        `json:"steady_samples"`
}

// Ratio is the first echo's median over the steady state's p50 (0 when
// the steady state is unknown).
func (f FirstPacket) Ratio() float64 {
	if f.SteadyP50Us <= 0 {
		return 0
	}
	return f.FirstMedianUs / f.SteadyP50Us
}

// OK reports whether the result has numbers to use.
func (l LatencyResult) OK() bool {
	if l.Error != "" {
		return false
	}
	if l.Kind == LatencyFirstPacket {
		return l.First != nil && l.First.Flows > l.First.FirstLost
	}
	return l.Samples > 0
}

// PutLatency adds or replaces (same id and path) a latency result and
// rewrites the file.
func (w *Writer) PutLatency(l LatencyResult) error {
	return w.Update(func(r *Results) {
		for i := range r.Latency {
			if r.Latency[i].ID == l.ID && r.Latency[i].Path == l.Path {
				r.Latency[i] = l
				return
			}
		}
		r.Latency = append(r.Latency, l)
	})
}

// validateLatency adds the problems of r.Latency: kinds and paths known,
// no duplicate (id, path), counts non-negative, and for a result without
// an error the round trips in order: min <= p50 <= p99 <= p99.9 <= max.
func validateLatency(r *Results, add func(string, ...any)) {
	seen := map[string]int{}
	for i, l := range r.Latency {
		k := fmt.Sprintf("latency[%d]", i)
		if l.ID == "" {
			add("%s.id: must be set", k)
		}
		switch l.Kind {
		case LatencyPingPong, LatencyUnderLoad, LatencyFirstPacket:
		default:
			add("%s.kind: must be %s, %s or %s, got %q", k, LatencyPingPong, LatencyUnderLoad, LatencyFirstPacket, l.Kind)
		}
		if l.Path != PathASAP2 && l.Path != PathBaseline {
			add("%s.path: must be asap2 or baseline, got %q", k, l.Path)
		}
		dk := l.ID + "\x00" + string(l.Path)
		if j, dup := seen[dk]; dup {
			add("%s: latency profile %q path %s duplicates latency[%d]", k, l.ID, l.Path, j)
		} else {
			seen[dk] = i
		}
		for name, v := range map[string]float64{"p50_us": l.P50Us, "p99_us": l.P99Us, "p99_9_us": l.P999Us, "max_us": l.MaxUs,
			"min_us": l.MinUs, "avg_us": l.AvgUs, "duration_seconds": l.DurationSeconds, "run_time_seconds": l.RunTimeSeconds} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				add("%s.%s: must be a finite number >= 0, got %v", k, name, v)
			}
		}
		if l.Samples < 0 || l.SentMessages < 0 || l.Dropped < 0 || l.Duplicated < 0 || l.OutOfOrder < 0 || l.MessageBytes < 0 {
			add("%s: counts must be >= 0, got samples %d sent %d dropped %d duplicated %d out-of-order %d message_bytes %d",
				k, l.Samples, l.SentMessages, l.Dropped, l.Duplicated, l.OutOfOrder, l.MessageBytes)
		}
		if l.Error == "" && l.Kind != LatencyFirstPacket && l.Samples > 0 &&
			!(l.MinUs <= l.P50Us && l.P50Us <= l.P99Us && l.P99Us <= l.P999Us && l.P999Us <= l.MaxUs) {
			add("%s: round trips out of order: min %v p50 %v p99 %v p99.9 %v max %v (must be min <= p50 <= p99 <= p99.9 <= max)",
				k, l.MinUs, l.P50Us, l.P99Us, l.P999Us, l.MaxUs)
		}
		if f := l.First; f != nil {
			if f.Flows != len(f.FirstUs) || f.FirstLost < 0 || f.FirstLost > f.Flows || f.SteadySamples < 0 {
				add("%s.first_packet: flows %d, %d first round trips, %d lost, %d steady samples do not add up", k, f.Flows, len(f.FirstUs), f.FirstLost, f.SteadySamples)
			}
			if f.FirstMedianUs > f.FirstMaxUs || f.FirstMedianUs < 0 || f.SteadyP50Us < 0 {
				add("%s.first_packet: median %v must be within 0..max %v, steady p50 %v >= 0", k, f.FirstMedianUs, f.FirstMaxUs, f.SteadyP50Us)
			}
		}
	}
}

// latencyIn returns the result for a latency profile on a path among files.
func latencyIn(files []*Results, id string, path Path) *LatencyResult {
	for _, f := range files {
		for i := range f.Latency {
			if f.Latency[i].ID == id && f.Latency[i].Path == path {
				return &f.Latency[i]
			}
		}
	}
	return nil
}

// latencyActual reads a latency metric for rule r: the value, what it is
// in words, or why there is none.
func latencyActual(r ThresholdRule, files []*Results) (float64, string, string) {
	l := latencyIn(files, r.Profile, Path(r.Path))
	if l == nil {
		return 0, "", fmt.Sprintf("no %s latency result for profile %s", r.Path, r.Profile)
	}
	if !l.OK() {
		why := l.Error
		if why == "" {
			why = "no samples"
		}
		return 0, "", fmt.Sprintf("latency profile %s %s has no result: %s", r.Profile, r.Path, why)
	}
	switch r.Metric {
	case MetricLatencyP50, MetricLatencyP99, MetricLatencyP999, MetricLatencyMax:
		if l.Kind == LatencyFirstPacket {
			return 0, "", fmt.Sprintf("%s is a sockperf metric; profile %s is %s (use first_packet_*)", r.Metric, r.Profile, l.Kind)
		}
		v := map[string]float64{MetricLatencyP50: l.P50Us, MetricLatencyP99: l.P99Us, MetricLatencyP999: l.P999Us, MetricLatencyMax: l.MaxUs}[r.Metric]
		return v, fmt.Sprintf("%s %s (%d round trips)", r.Metric, FormatMicros(v), l.Samples), ""
	}
	if l.First == nil {
		return 0, "", fmt.Sprintf("%s needs a first-packet profile; profile %s is %s", r.Metric, r.Profile, l.Kind)
	}
	f := *l.First
	switch r.Metric {
	case MetricFirstPacketP50:
		return f.FirstMedianUs, fmt.Sprintf("first-packet median %s over %d flows", FormatMicros(f.FirstMedianUs), f.Flows-f.FirstLost), ""
	case MetricFirstPacketMax:
		return f.FirstMaxUs, fmt.Sprintf("first-packet max %s over %d flows", FormatMicros(f.FirstMaxUs), f.Flows-f.FirstLost), ""
	default:
		if f.SteadyP50Us <= 0 {
			return 0, "", fmt.Sprintf("profile %s %s has no steady-state round trip", r.Profile, r.Path)
		}
		return f.Ratio(), fmt.Sprintf("first-packet %.2f× the steady state (%s / %s)", f.Ratio(), FormatMicros(f.FirstMedianUs), FormatMicros(f.SteadyP50Us)), ""
	}
}

// FormatMicros writes a round trip: "18.3 µs", "1.83 ms".
func FormatMicros(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%.1f ms", us/1000)
	case us >= 1000:
		return fmt.Sprintf("%.2f ms", us/1000)
	case us >= 100:
		return fmt.Sprintf("%.0f µs", us)
	default:
		return fmt.Sprintf("%.1f µs", us)
	}
}

// LatencyShape is one latency profile of the catalogue.
type LatencyShape struct {
	ID   string
	Name string
	Kind string
}

// Latency profile ids, in the order they run.
const (
	LatencyIdleID  = "lat-idle"
	LatencyLoadID  = "lat-load"
	LatencyFirstID = "lat-first"
)

// LatencyCatalogue is every latency profile, in the order they run: the
// pair idle first, then under load, then the first packets of fresh flows
// (last: its idle gaps let every datapath flow of the pair expire).
func LatencyCatalogue() []LatencyShape {
	return []LatencyShape{
		{LatencyIdleID, "Latency, idle (sockperf ping-pong)", LatencyPingPong},
		{LatencyLoadID, "Latency under load (sockperf ping-pong beside an iperf3 flow)", LatencyUnderLoad},
		{LatencyFirstID, "First-packet latency of fresh flows (ping after an idle gap)", LatencyFirstPacket},
	}
}

// LatencyProfileIDs are the catalogue's ids.
func LatencyProfileIDs() []string {
	var ids []string
	for _, s := range LatencyCatalogue() {
		ids = append(ids, s.ID)
	}
	return ids
}
