package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The family's id (its config section's key) and its results.
const (
	FamilyConnections = "connections"
)

func init() {
	Families.Register(20, Family{Key: "connections", Validate: validateConnections}, FamilyConnections)
}

// ConnectionResult is one N of the connection-scale profile (config
// connections): N concurrent TCP connections between the pair, the
// hypervisors' conntrack tables sampled during iperf3's omit period, the
// delivered rate of the measured seconds after it.
type ConnectionResult struct {
	N         int  `json:"n"` // the data connections asked for (iperf3 -P over the processes)
	Path      Path `json:"path"`
	Processes int  `json:"processes"` // iperf3 client processes (one server port each)
	// Opened is every TCP connection the run opened: N and one control
	// connection per process.
	Opened int `json:"opened"`
	// BitratePerConnectionBps is the cap of each connection (iperf3 -b,
	// connections.bitrate_per_connection); 0 = unlimited.
	BitratePerConnectionBps int64     `json:"bitrate_per_connection_bps,omitempty"`
	DurationSeconds         float64   `json:"duration_seconds"`     // iperf3 -t
	OffloadWaitSeconds      float64   `json:"offload_wait_seconds"` // iperf3 -O, the sampled seconds
	StartedAt               time.Time `json:"started_at,omitzero"`
	DeliveredBps            float64   `json:"delivered_bps"`
	Retransmits             int64     `json:"retransmits"`
	Iperf3Version           string    `json:"iperf3_version,omitempty"`
	// NotApplicable says why there is no share (no conntrack on the path:
	// data_port.port_security false); Hosts is then empty.
	NotApplicable string           `json:"not_applicable,omitempty"`
	Hosts         []ConnectionHost `json:"hosts,omitempty"`
	EvidenceFile  string           `json:"evidence_file,omitempty"`
	Error         string           `json:"error,omitempty"`
}

// ConnectionHost is one hypervisor's view of the connections of a
// ConnectionResult.
type ConnectionHost struct {
	Hypervisor string `json:"hypervisor"`
	// Source is the table the counts come from: "kernel" (the one that
	// says [HW_OFFLOAD]) or "ovs-userspace" (OVS's userspace conntrack,
	// software by construction).
	Source    string  `json:"source,omitempty"`
	Found     int     `json:"found"`     // live connections of the run at the last sample
	Offloaded int     `json:"offloaded"` // of them [HW_OFFLOAD] in every zone
	Share     float64 `json:"share"`     // Offloaded / Opened, 0..1
	// TimeToOffloadSeconds is when every opened connection was first seen
	// [HW_OFFLOAD], from the clients' start; nil = not within the wait
	// (Reason says so with the numbers).
	TimeToOffloadSeconds *float64 `json:"time_to_offload_seconds"`
	Samples              int      `json:"samples"` // reads kept (ended within the omit period)
	// TableCount and TableMax are the table's fill against its limit at
	// the last read (nf_conntrack_count / _max, or OVS's nconns /
	// maxconns); 0 when not read. Count at Max: new connections dropped.
	TableCount  int    `json:"table_count,omitempty"`
	TableMax    int    `json:"table_max,omitempty"`
	Reason      string `json:"reason"`
	SamplesFile string `json:"samples_file,omitempty"`
}

// Shared reports whether the result has a share (conntrack was sampled
// and some read kept).
func (h ConnectionHost) Shared() bool { return h.Samples > 0 }

// PutConnection stores a connection-scale result (replacing one with the
// same N and path) and writes the file.
func (w *Writer) PutConnection(c ConnectionResult) error {
	return w.Update(func(r *Results) {
		c = deepCopy(c)
		for i := range r.Connections {
			if r.Connections[i].N == c.N && r.Connections[i].Path == c.Path {
				r.Connections[i] = c
				return
			}
		}
		r.Connections = append(r.Connections, c)
	})
}

func validateConnections(r *Results, add func(string, ...any)) {
	seen := map[string]int{}
	for i, c := range r.Connections {
		k := fmt.Sprintf("connections[%d]", i)
		if c.N < 1 || c.Processes < 1 || c.Opened < c.N {
			add("%s: n and processes must be >= 1 and opened >= n, got n %d processes %d opened %d", k, c.N, c.Processes, c.Opened)
		}
		if c.Path != PathASAP2 && c.Path != PathBaseline {
			add("%s.path: must be asap2 or baseline, got %q", k, c.Path)
		}
		dk := fmt.Sprint(c.N, "\x00", c.Path)
		if j, dup := seen[dk]; dup {
			add("%s: n %d path %s duplicates connections[%d]", k, c.N, c.Path, j)
		} else {
			seen[dk] = i
		}
		if c.BitratePerConnectionBps < 0 {
			add("%s.bitrate_per_connection_bps: must be >= 0 (0 = unlimited), got %d", k, c.BitratePerConnectionBps)
		}
		if math.IsNaN(c.DeliveredBps) || math.IsInf(c.DeliveredBps, 0) || c.DeliveredBps < 0 {
			add("%s.delivered_bps: must be a finite number >= 0, got %v", k, c.DeliveredBps)
		}
		if c.NotApplicable != "" && len(c.Hosts) > 0 {
			add("%s: a share not applicable (%s) with %d hypervisors' shares", k, c.NotApplicable, len(c.Hosts))
		}
		for j, h := range c.Hosts {
			hk := fmt.Sprintf("%s.hosts[%d]", k, j)
			if h.Hypervisor == "" {
				add("%s.hypervisor: must be set", hk)
			}
			if math.IsNaN(h.Share) || h.Share < 0 || h.Share > 1 || h.Offloaded < 0 || h.Found < 0 || h.Offloaded > c.Opened {
				add("%s: share must be 0..1 and offloaded 0..opened (%d), got share %v offloaded %d found %d", hk, c.Opened, h.Share, h.Offloaded, h.Found)
			}
			if t := h.TimeToOffloadSeconds; t != nil && (math.IsNaN(*t) || *t < 0) {
				add("%s.time_to_offload_seconds: must be >= 0 or null, got %v", hk, *t)
			}
		}
	}
}

// Threshold metrics on the connection-scale profile (profile
// connections-<N>): a gate such as "connections-1000 asap2
// offloaded_share >= 0.99" fails a build whose table stops filling.
const (
	// MetricOffloadedShare is the lowest share [HW_OFFLOAD] among the
	// pair's hypervisors (0..1): the pair is as offloaded as its worse side.
	MetricOffloadedShare = "offloaded_share"
	// MetricTimeToOffload is the slowest hypervisor's time until every
	// connection was [HW_OFFLOAD] (seconds from the clients' start); a
	// hypervisor where that never happened within the wait fails any rule.
	MetricTimeToOffload = "time_to_offload_seconds"
)

// ConnectionMetrics are the threshold metrics of the connection-scale
// profile.
func ConnectionMetrics() []string { return []string{MetricOffloadedShare, MetricTimeToOffload} }

// IsConnectionMetric reports whether metric is one of ConnectionMetrics.
func IsConnectionMetric(metric string) bool { return slices.Contains(ConnectionMetrics(), metric) }

// ConnectionProfileID names the profile of n connections (connections-<n>):
// its evidence files, log lines, Ginkgo label and thresholds' profile.
func ConnectionProfileID(n int) string { return fmt.Sprintf("connections-%d", n) }

// connectionIn returns the first connection-scale result named id on path
// among files.
func connectionIn(files []*Results, id string, path Path) *ConnectionResult {
	for _, f := range files {
		for i := range f.Connections {
			if c := &f.Connections[i]; ConnectionProfileID(c.N) == id && c.Path == path {
				return c
			}
		}
	}
	return nil
}

// evaluateConnectionMetric is a connection metric's actual value and its
// words, or ok false with why there is none: the profile not run or
// failed, no conntrack on the path (the share is not applicable, never 0 or
// 1), a hypervisor with no read kept, or (time) one never fully offloaded.
func evaluateConnectionMetric(r ThresholdRule, files []*Results) (actual float64, what string, ok bool) {
	c := connectionIn(files, r.Profile, Path(r.Path))
	switch {
	case c == nil:
		return 0, fmt.Sprintf("no %s result for profile %s", r.Path, r.Profile), false
	case c.Error != "":
		return 0, fmt.Sprintf("profile %s %s failed: %s", r.Profile, r.Path, c.Error), false
	case c.NotApplicable != "":
		return 0, fmt.Sprintf("profile %s %s: the offloaded share is %s", r.Profile, r.Path, c.NotApplicable), false
	case len(c.Hosts) == 0:
		return 0, fmt.Sprintf("profile %s %s: no hypervisor's conntrack table was read", r.Profile, r.Path), false
	}
	var parts []string
	for i, h := range c.Hosts {
		if !h.Shared() {
			return 0, fmt.Sprintf("profile %s %s: %s has no conntrack read kept: %s", r.Profile, r.Path, h.Hypervisor, h.Reason), false
		}
		if r.Metric == MetricOffloadedShare {
			if i == 0 || h.Share < actual {
				actual = h.Share
			}
			parts = append(parts, fmt.Sprintf("%s %d of %d", h.Hypervisor, h.Offloaded, c.Opened))
			continue
		}
		if h.TimeToOffloadSeconds == nil {
			return 0, fmt.Sprintf("profile %s %s: %s never had every connection offloaded within %gs: %s", r.Profile, r.Path, h.Hypervisor, c.OffloadWaitSeconds, h.Reason), false
		}
		actual = max(actual, *h.TimeToOffloadSeconds)
		parts = append(parts, fmt.Sprintf("%s %.1f s", h.Hypervisor, *h.TimeToOffloadSeconds))
	}
	if r.Metric == MetricOffloadedShare {
		return actual, fmt.Sprintf("offloaded share %s (the lowest: %s)", FormatPercent(100*actual), strings.Join(parts, ", ")), true
	}
	return actual, fmt.Sprintf("time to offload %.1f s (the slowest: %s)", actual, strings.Join(parts, ", ")), true
}
