package results

import (
	"fmt"
	"time"
)

// The family's id (its config section's key) and its results.
const (
	FamilyPPS = "pps"
)

func init() {
	Families.Register(5, Family{Key: "searches"}, FamilyPPS)
}

// PacketRates are a UDP repeat's datagrams and rates (e2e/iperf3.Packets
// derives them; its comment says how each iperf3 version is counted).
type PacketRates struct {
	// LengthBytes is the datagram payload (-l).
	LengthBytes int   `json:"length_bytes"`
	Sent        int64 `json:"sent"`
	Arrived     int64 `json:"arrived"`
	Lost        int64 `json:"lost"`
	// Unsent are datagrams iperf3 < 3.18 counted but never sent, taken
	// off Lost (0 from 3.18 on).
	Unsent       int64   `json:"unsent,omitempty"`
	OfferedPps   float64 `json:"offered_pps"`
	DeliveredPps float64 `json:"delivered_pps"`
	// LossPercent is Lost / (Arrived + Lost) × 100.
	LossPercent float64 `json:"loss_percent"`
	// Basis names how the datagrams were counted, with the iperf3 version.
	Basis string `json:"basis"`
}

// PacketSummary is the packet-rate summary of a profile over its
// successful repeats that have packet rates.
type PacketSummary struct {
	Offered   Stat   `json:"offered_pps"`
	Delivered Stat   `json:"delivered_pps"`
	Loss      Stat   `json:"loss_percent"`
	Basis     string `json:"basis"` // the first repeat's
}

// SummarizePackets fills p.Summary.Packets from the repeats' Packets
// (nil when no successful repeat has them). Summarize calls it.
func SummarizePackets(p *ProfileResult) {
	var off, del, loss []float64
	basis := ""
	for _, r := range p.Runs {
		if r.Error != "" || r.Packets == nil {
			continue
		}
		off = append(off, r.Packets.OfferedPps)
		del = append(del, r.Packets.DeliveredPps)
		loss = append(loss, r.Packets.LossPercent)
		if basis == "" {
			basis = r.Packets.Basis
		}
	}
	if len(off) == 0 {
		p.Summary.Packets = nil
		return
	}
	p.Summary.Packets = &PacketSummary{Offered: StatOf(off), Delivered: StatOf(del), Loss: StatOf(loss), Basis: basis}
}

// Search kinds: the zero-loss search (RFC 2544 26.1 "throughput", the
// no-drop rate) and the partial-drop-rate search (ETSI GS NFV-TST 009).
const (
	SearchNDR = "NDR"
	SearchPDR = "PDR"
)

// SearchID is the stable ID of a search: "ndr-p1-l64", "pdr-p1-l64".
func SearchID(kind string, streams, lengthBytes int) string {
	k := "ndr"
	if kind == SearchPDR {
		k = "pdr"
	}
	return fmt.Sprintf("%s-p%d-l%d", k, streams, lengthBytes)
}

// SearchResult is one zero-loss (or partial-drop) search on one path.
type SearchResult struct {
	ID          string  `json:"id"`
	Kind        string  `json:"kind"` // NDR | PDR
	Path        Path    `json:"path"`
	Streams     int     `json:"streams"`
	LengthBytes int     `json:"length_bytes"`
	LossPercent float64 `json:"loss_percent"` // the criterion: a trial passes at or below it
	// The search's configuration.
	TrialSeconds      float64 `json:"trial_seconds"`
	MaxTrials         int     `json:"max_trials"`
	ResolutionPercent float64 `json:"resolution_percent"` // of the upper bound
	// Found is true only when a verification trial passed at RateBps;
	// otherwise RateBps and RatePps are 0 ("none found", never a guess).
	Found   bool    `json:"found"`
	RateBps float64 `json:"rate_bps"` // payload bit/s (iperf3 -b)
	RatePps float64 `json:"rate_pps"` // RateBps / (8 × LengthBytes)
	// Bounds: the start (upper from the unlimited trial unless configured)
	// and where the search left them.
	LowerBps      float64       `json:"lower_bps"`
	UpperBps      float64       `json:"upper_bps"`
	FinalLowerBps float64       `json:"final_lower_bps"`
	FinalUpperBps float64       `json:"final_upper_bps"`
	StopReason    string        `json:"stop_reason"`
	Trials        []SearchTrial `json:"trials"`
	Iperf3Version string        `json:"iperf3_version,omitempty"`
	PacketBasis   string        `json:"packet_basis,omitempty"`
	Error         string        `json:"error,omitempty"`
}

// SearchTrial is one trial of a search.
type SearchTrial struct {
	N            int       `json:"n"`
	Phase        string    `json:"phase"`         // unlimited | search | verify
	RequestedBps float64   `json:"requested_bps"` // aggregate -b; 0 = unlimited
	StartedAt    time.Time `json:"started_at,omitzero"`
	OfferedBps   float64   `json:"offered_bps"`
	DeliveredBps float64   `json:"delivered_bps"`
	OfferedPps   float64   `json:"offered_pps"`
	DeliveredPps float64   `json:"delivered_pps"`
	LossPercent  float64   `json:"loss_percent"`
	Pass         bool      `json:"pass"`
	Reason       string    `json:"reason"`
	Error        string    `json:"error,omitempty"`
	EvidenceFile string    `json:"evidence_file,omitempty"`
}

// PutSearch stores a search (replacing one with the same ID and path) and
// writes the file.
func (w *Writer) PutSearch(s SearchResult) error {
	return w.Update(func(r *Results) {
		s.Trials = append([]SearchTrial(nil), s.Trials...)
		for i := range r.Searches {
			if r.Searches[i].ID == s.ID && r.Searches[i].Path == s.Path {
				r.Searches[i] = s
				return
			}
		}
		r.Searches = append(r.Searches, s)
	})
}

// Packet and search threshold metrics (median over repeats for the pps
// ones; the verified rate for the searches, whose rule names the search ID
// as its profile).
const (
	MetricDeliveredPps = "delivered_pps"
	MetricOfferedPps   = "offered_pps"
	MetricNDR          = "ndr_bps"
	MetricPDR          = "pdr_bps"
)

// PacketMetrics are the metrics this file evaluates.
func PacketMetrics() []string {
	return []string{MetricDeliveredPps, MetricOfferedPps, MetricNDR, MetricPDR}
}

// IsSearchMetric reports whether metric is a search's rate (its rule's
// profile is a SearchID).
func IsSearchMetric(metric string) bool { return metric == MetricNDR || metric == MetricPDR }

func searchIn(files []*Results, id string, path Path) *SearchResult {
	for _, f := range files {
		for i := range f.Searches {
			if f.Searches[i].ID == id && f.Searches[i].Path == path {
				return &f.Searches[i]
			}
		}
	}
	return nil
}

// evaluatePacketMetric computes the actual value of a packet or search
// metric; ok is false with the reason when there is nothing to measure.
func evaluatePacketMetric(r ThresholdRule, files []*Results) (actual float64, what string, ok bool) {
	if IsSearchMetric(r.Metric) {
		s := searchIn(files, r.Profile, Path(r.Path))
		switch {
		case s == nil:
			return 0, fmt.Sprintf("no %s search %s", r.Path, r.Profile), false
		case (r.Metric == MetricNDR) != (s.Kind == SearchNDR):
			return 0, fmt.Sprintf("search %s is a %s search, the metric %s needs the other kind", r.Profile, s.Kind, r.Metric), false
		case s.Error != "" && !s.Found:
			return 0, fmt.Sprintf("search %s %s failed: %s", r.Profile, r.Path, s.Error), false
		}
		// Not found is rate 0: a gate ">= X" on it fails, as it must.
		what = fmt.Sprintf("%s %s (%s)", s.Kind, FormatBps(s.RateBps), s.StopReason)
		if !s.Found {
			what = fmt.Sprintf("%s none found (%s)", s.Kind, s.StopReason)
		}
		return s.RateBps, what, true
	}
	p := profileIn(files, r.Profile, Path(r.Path))
	if p == nil {
		return 0, fmt.Sprintf("no %s result for profile %s", r.Path, r.Profile), false
	}
	ps := p.Summary.Packets
	if ps == nil || ps.Delivered.N == 0 {
		return 0, fmt.Sprintf("profile %s %s has no repeat with packet rates (UDP only)", r.Profile, r.Path), false
	}
	if r.Metric == MetricOfferedPps {
		return ps.Offered.Median, fmt.Sprintf("offered %s (median of %d)", FormatPps(ps.Offered.Median), ps.Offered.N), true
	}
	return ps.Delivered.Median, fmt.Sprintf("delivered %s (median of %d)", FormatPps(ps.Delivered.Median), ps.Delivered.N), true
}

// FormatPps writes a packet rate: "1.23 Mpps", "153.9 kpps", "870 pps".
func FormatPps(pps float64) string {
	switch {
	case pps >= 1e6:
		return fmt.Sprintf("%.2f Mpps", pps/1e6)
	case pps >= 1e3:
		return fmt.Sprintf("%.1f kpps", pps/1e3)
	}
	return fmt.Sprintf("%.0f pps", pps)
}
