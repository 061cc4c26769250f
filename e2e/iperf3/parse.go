package iperf3

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// Result is one iperf3 client run (or the sum of several, see SumResults).
//
// Where each number comes from in `iperf3 -J` client output:
//
//   - OfferedBps: end.sum_sent.bits_per_second (TCP, and UDP since iperf3
//     3.11); for UDP before 3.11 (only end.sum exists) end.sum.bits_per_second,
//     which src/iperf_api.c computes as total_sent*8/sender_time, i.e. also the
//     sender rate.
//   - DeliveredBps: end.sum_received.bits_per_second (receiver bytes over the
//     receiver's time). UDP before 3.11 has no receiver byte count in the
//     client JSON: delivered is derived as
//     end.sum.bytes × (packets − lost_packets) / packets × 8 / end.sum.seconds
//     (end.sum.seconds is the receiver's time there) and DeliveredDerived is set.
//   - LossPercent (UDP): 100 × lost_packets / packets of the receiver summary
//     (end.sum_received), i.e. datagrams missing among those the receiver
//     expected by sequence number up to the last one it saw — the receiver's
//     own "Lost/Total" (iperf3's own sum_received.lost_percent divides by the
//     sender's packet count instead; the two differ by the datagrams lost at
//     the very end). Before 3.11 only end.sum exists and its packets is the
//     sender's count, so LossPercent = 100 × lost_packets / packets on that
//     basis (LossBasis says which). TCP: 0.
type Result struct {
	Version string `json:"iperf3_version"` // start.version, e.g. "iperf 3.12"
	// StartedAt is start.timestamp.timesecs (UTC, whole seconds): when the
	// client connected; the intervals count from about then.
	StartedAt time.Time `json:"started_at,omitzero"`
	Protocol  Protocol  `json:"protocol"`
	Streams   int       `json:"streams"`
	Reverse   bool      `json:"reverse,omitempty"`
	// BlockSize is test_start.blksize (UDP: datagram payload, -l).
	BlockSize int `json:"block_size,omitempty"`
	// TargetBitrate is test_start.target_bitrate (per stream; present since 3.10).
	TargetBitrate    int64   `json:"target_bitrate_bps,omitempty"`
	RequestedSeconds float64 `json:"requested_seconds"` // test_start.duration (-t)
	OmitSeconds      float64 `json:"omit_seconds,omitempty"`
	SenderSeconds    float64 `json:"sender_seconds"`
	ReceiverSeconds  float64 `json:"receiver_seconds"`

	BytesSent     int64 `json:"bytes_sent"`
	BytesReceived int64 `json:"bytes_received"`

	OfferedBps       float64 `json:"offered_bps"`
	DeliveredBps     float64 `json:"delivered_bps"`
	DeliveredDerived bool    `json:"delivered_derived,omitempty"`

	// UDP datagram counts (0 for TCP).
	SenderPackets   int64   `json:"sender_packets,omitempty"`
	ReceiverPackets int64   `json:"receiver_packets,omitempty"`
	LostPackets     int64   `json:"lost_packets,omitempty"`
	LossPercent     float64 `json:"loss_percent"`
	LossBasis       string  `json:"loss_basis,omitempty"`
	JitterMs        float64 `json:"jitter_ms,omitempty"`
	OutOfOrder      int64   `json:"out_of_order,omitempty"`

	// Retransmits is end.sum_sent.retransmits (TCP; HasRetransmits is false
	// when the sender's OS does not report them).
	Retransmits    int64 `json:"retransmits"`
	HasRetransmits bool  `json:"has_retransmits,omitempty"`

	// Intervals is the client's own series (the sender in a normal test).
	Intervals []Interval `json:"intervals"`
	// ReceiverIntervals is the server's series from server_output_json
	// (present when the client ran with --get-server-output); for UDP it
	// carries per-interval lost/packets as the receiver saw them.
	ReceiverIntervals []Interval `json:"receiver_intervals,omitempty"`

	CPU CPU `json:"cpu"`

	// Processes is how many iperf3 client processes this result sums (1 for Parse).
	Processes int      `json:"processes"`
	Warnings  []string `json:"warnings,omitempty"`
}

// Interval is one reporting interval (intervals[].sum).
type Interval struct {
	Start       float64 `json:"start"`
	End         float64 `json:"end"`
	Seconds     float64 `json:"seconds"`
	Bytes       int64   `json:"bytes"`
	Bps         float64 `json:"bps"`
	Retransmits int64   `json:"retransmits,omitempty"` // TCP sender
	Packets     int64   `json:"packets,omitempty"`     // UDP
	LostPackets int64   `json:"lost_packets,omitempty"`
	LossPercent float64 `json:"loss_percent,omitempty"`
	Omitted     bool    `json:"omitted,omitempty"` // inside -O warm-up
}

// CPU is end.cpu_utilization_percent: host is the side that printed the
// JSON (the client), remote the server.
type CPU struct {
	HostTotal    float64 `json:"host_total"`
	HostUser     float64 `json:"host_user"`
	HostSystem   float64 `json:"host_system"`
	RemoteTotal  float64 `json:"remote_total"`
	RemoteUser   float64 `json:"remote_user"`
	RemoteSystem float64 `json:"remote_system"`
}

// DeliveredIntervals is the series that best shows what arrived: the
// receiver's intervals when present, otherwise the client's.
func (r Result) DeliveredIntervals() []Interval {
	if len(r.ReceiverIntervals) > 0 {
		return r.ReceiverIntervals
	}
	return r.Intervals
}

// IperfError is an `error` field in iperf3's JSON output, e.g. "the server
// is busy running a test. try again later".
type IperfError struct{ Message string }

func (e *IperfError) Error() string { return "iperf3 reported: " + e.Message }

// ShortRunError is a test that ended well before its requested duration.
type ShortRunError struct {
	Requested, Ran float64 // seconds
}

func (e *ShortRunError) Error() string {
	return fmt.Sprintf("iperf3 test ran %.3f s of the requested %.0f s", e.Ran, e.Requested)
}

// ShortRunTolerance is how much shorter than test_start.duration a run may
// be and still count as complete: max(0.5 s, 5 % of the duration).
func ShortRunTolerance(requested float64) float64 { return math.Max(0.5, 0.05*requested) }

// CPUBoundPercent is the CPU utilisation above which a warning says the
// side may have been CPU bound.
const CPUBoundPercent = 90.0

// raw JSON shapes. Numbers are float64 so that any numeric form decodes.
type rawDoc struct {
	Start     *rawStart     `json:"start"`
	Intervals []rawInterval `json:"intervals"`
	End       *rawEnd       `json:"end"`
	Error     *string       `json:"error"`
	Server    *rawDoc       `json:"server_output_json"`
}

type rawStart struct {
	Version   string            `json:"version"`
	Connected []json.RawMessage `json:"connected"` // one per stream connected
	// A client's on_connect: printed once the server's PARAM_EXCHANGE arrived.
	ConnectingTo *struct {
		Host string `json:"host"`
	} `json:"connecting_to"`
	Timestamp *struct {
		Timesecs int64 `json:"timesecs"`
	} `json:"timestamp"`
	TestStart *struct {
		Protocol      string   `json:"protocol"`
		NumStreams    float64  `json:"num_streams"`
		BlkSize       float64  `json:"blksize"`
		Omit          float64  `json:"omit"`
		Duration      float64  `json:"duration"`
		Reverse       float64  `json:"reverse"`
		TargetBitrate *float64 `json:"target_bitrate"`
	} `json:"test_start"`
}

type rawSum struct {
	Start         float64  `json:"start"`
	End           float64  `json:"end"`
	Seconds       float64  `json:"seconds"`
	Bytes         float64  `json:"bytes"`
	BitsPerSecond float64  `json:"bits_per_second"`
	Retransmits   *float64 `json:"retransmits"`
	JitterMs      float64  `json:"jitter_ms"`
	LostPackets   *float64 `json:"lost_packets"`
	Packets       *float64 `json:"packets"`
	LostPercent   *float64 `json:"lost_percent"`
	OutOfOrder    *float64 `json:"out_of_order"`
	Omitted       bool     `json:"omitted"`
	Sender        *bool    `json:"sender"`
}

type rawInterval struct {
	Sum *rawSum `json:"sum"`
}

type rawEnd struct {
	Streams []struct {
		UDP *rawSum `json:"udp"`
	} `json:"streams"`
	Sum         *rawSum `json:"sum"`
	SumSent     *rawSum `json:"sum_sent"`
	SumReceived *rawSum `json:"sum_received"`
	CPU         *CPU    `json:"cpu_utilization_percent"`
}

// Parse reads the output of an `iperf3 -c ... -J` client. It never panics.
//
// It returns an *IperfError when the JSON carries iperf3's `error` field,
// a *ShortRunError when the test ended well short of test_start.duration
// (see ShortRunTolerance), and a plain error for input that is not iperf3
// client JSON. On error the Result holds whatever could be read (useful as
// evidence), never made-up numbers.
func Parse(data []byte) (Result, error) {
	r := Result{Processes: 1}
	clean, fixed := sanitizeNonFinite(data)
	if fixed > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d non-finite numbers (nan/inf) in the JSON were read as absent", fixed))
	}
	var doc rawDoc
	if err := json.Unmarshal(clean, &doc); err != nil {
		return r, fmt.Errorf("not iperf3 JSON (%s): %w", snippet(data), err)
	}
	if doc.Start != nil {
		r.Version = doc.Start.Version
		if ts := doc.Start.Timestamp; ts != nil && ts.Timesecs > 0 {
			r.StartedAt = time.Unix(ts.Timesecs, 0).UTC()
		}
	}
	r2, err := parseDoc(&doc, r)
	if doc.Error != nil {
		// iperf3's own message wins; r2 still carries what was measured.
		return r2, &IperfError{Message: *doc.Error}
	}
	return r2, err
}

func parseDoc(doc *rawDoc, r Result) (Result, error) {
	if doc.Start == nil || doc.Start.TestStart == nil {
		return r, errors.New("iperf3 JSON has no start.test_start: not the output of a test that started")
	}
	ts := doc.Start.TestStart
	r.Protocol = Protocol(ts.Protocol)
	r.Streams = toInt(ts.NumStreams)
	r.BlockSize = toInt(ts.BlkSize)
	r.OmitSeconds = finite(ts.Omit)
	r.RequestedSeconds = finite(ts.Duration)
	r.Reverse = ts.Reverse != 0
	if ts.TargetBitrate != nil {
		r.TargetBitrate = toInt64(*ts.TargetBitrate)
	}
	if r.Protocol != TCP && r.Protocol != UDP {
		return r, fmt.Errorf("start.test_start.protocol: unsupported, got %q", ts.Protocol)
	}
	r.Intervals = convertIntervals(doc.Intervals)
	if doc.Server != nil {
		r.ReceiverIntervals = convertIntervals(doc.Server.Intervals)
	}
	if doc.End == nil {
		return r, errors.New("iperf3 JSON has no end object: the test did not finish")
	}
	end := doc.End
	if end.CPU != nil {
		r.CPU = sanitizeCPU(*end.CPU)
	}
	var err error
	if r.Protocol == TCP {
		err = r.fillTCP(end)
	} else {
		err = r.fillUDP(end)
	}
	if err != nil {
		return r, err
	}
	if err := r.sane(); err != nil {
		return r, err
	}
	r.addWarnings()
	if r.RequestedSeconds > 0 && r.SenderSeconds < r.RequestedSeconds-ShortRunTolerance(r.RequestedSeconds) {
		return r, &ShortRunError{Requested: r.RequestedSeconds, Ran: r.SenderSeconds}
	}
	return r, nil
}

func (r *Result) fillTCP(end *rawEnd) error {
	if end.SumSent == nil || end.SumReceived == nil {
		return errors.New("TCP result lacks end.sum_sent or end.sum_received")
	}
	s, v := end.SumSent, end.SumReceived
	r.SenderSeconds, r.ReceiverSeconds = finite(s.Seconds), finite(v.Seconds)
	r.BytesSent, r.BytesReceived = toInt64(s.Bytes), toInt64(v.Bytes)
	r.OfferedBps, r.DeliveredBps = finite(s.BitsPerSecond), finite(v.BitsPerSecond)
	if s.Retransmits != nil {
		r.Retransmits = toInt64(*s.Retransmits)
		r.HasRetransmits = true
	}
	return nil
}

func (r *Result) fillUDP(end *rawEnd) error {
	if end.SumSent != nil && end.SumReceived != nil {
		// iperf3 >= 3.11 (esnet/iperf commit 0d078c4a, PR #1174).
		s, v := end.SumSent, end.SumReceived
		r.SenderSeconds, r.ReceiverSeconds = finite(s.Seconds), finite(v.Seconds)
		r.BytesSent, r.BytesReceived = toInt64(s.Bytes), toInt64(v.Bytes)
		r.OfferedBps, r.DeliveredBps = finite(s.BitsPerSecond), finite(v.BitsPerSecond)
		r.SenderPackets = ptrInt64(s.Packets)
		r.ReceiverPackets = ptrInt64(v.Packets)
		r.LostPackets = ptrInt64(v.LostPackets)
		r.JitterMs = finite(v.JitterMs)
		r.LossBasis = "receiver"
		r.computeLoss(r.ReceiverPackets)
	} else if end.Sum != nil {
		// iperf3 <= 3.10: one "sum" mixing both sides (bytes and rate of the
		// sender, seconds/jitter/lost of the receiver, packets of the sender).
		s := end.Sum
		r.ReceiverSeconds = finite(s.Seconds)
		r.SenderSeconds = r.ReceiverSeconds
		if len(end.Streams) > 0 && end.Streams[0].UDP != nil {
			r.SenderSeconds = finite(end.Streams[0].UDP.Seconds) // per-stream "udp" carries sender_time
		}
		r.BytesSent = toInt64(s.Bytes)
		r.OfferedBps = finite(s.BitsPerSecond)
		r.SenderPackets = ptrInt64(s.Packets)
		r.LostPackets = ptrInt64(s.LostPackets)
		r.JitterMs = finite(s.JitterMs)
		r.LossBasis = "sender-count (iperf3 < 3.11 end.sum)"
		r.computeLoss(r.SenderPackets)
		if r.SenderPackets > 0 && r.ReceiverSeconds > 0 {
			arrived := float64(r.SenderPackets-r.LostPackets) / float64(r.SenderPackets)
			r.BytesReceived = int64(math.Round(float64(r.BytesSent) * arrived))
			r.DeliveredBps = finite(float64(r.BytesReceived) * 8 / r.ReceiverSeconds)
		}
		r.DeliveredDerived = true
		r.Warnings = append(r.Warnings, "UDP output has only end.sum (iperf3 < 3.11): delivered is derived from the sender's bytes and the receiver's lost/total packets")
	} else {
		return errors.New("UDP result lacks end.sum_sent/end.sum_received and end.sum")
	}
	for _, st := range end.Streams {
		if st.UDP != nil && st.UDP.OutOfOrder != nil {
			r.OutOfOrder += toInt64(*st.UDP.OutOfOrder)
		}
	}
	return nil
}

// sane rejects numbers no iperf3 writes: negative rates, byte or packet
// counts, and more datagrams lost than the count they are a share of (the
// loss would exceed 100 %). Such a file is damaged or not iperf3's, and its
// numbers must not reach a report.
func (r *Result) sane() error {
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"sender bits_per_second", r.OfferedBps}, {"receiver bits_per_second", r.DeliveredBps},
		{"sender bytes", float64(r.BytesSent)}, {"receiver bytes", float64(r.BytesReceived)},
		{"sender packets", float64(r.SenderPackets)}, {"receiver packets", float64(r.ReceiverPackets)},
	} {
		if f.v < 0 {
			return fmt.Errorf("iperf3 JSON: end: %s is negative, got %v", f.key, f.v)
		}
	}
	if r.LossPercent > 100 {
		return fmt.Errorf("iperf3 JSON: end: lost_packets %d exceed the %s packet count (loss %.1f%%)", r.LostPackets, r.LossBasis, r.LossPercent)
	}
	return nil
}

func (r *Result) computeLoss(total int64) {
	if r.LostPackets < 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("negative lost_packets %d (reordering) counted as 0", r.LostPackets))
		r.LostPackets = 0
	}
	r.LossPercent = 0
	if total > 0 {
		r.LossPercent = 100 * float64(r.LostPackets) / float64(total)
	}
}

func (r *Result) addWarnings() {
	if r.OfferedBps > 0 && r.DeliveredBps == 0 {
		r.Warnings = append(r.Warnings, "receiver reported nothing delivered although the sender sent data")
	}
	if r.CPU.HostTotal >= CPUBoundPercent {
		r.Warnings = append(r.Warnings, fmt.Sprintf("client CPU %.1f%%: the client may have been CPU bound", r.CPU.HostTotal))
	}
	if r.CPU.RemoteTotal >= CPUBoundPercent {
		r.Warnings = append(r.Warnings, fmt.Sprintf("server CPU %.1f%%: the server may have been CPU bound", r.CPU.RemoteTotal))
	}
}

func convertIntervals(in []rawInterval) []Interval {
	out := make([]Interval, 0, len(in))
	for _, iv := range in {
		if iv.Sum == nil {
			continue
		}
		s := iv.Sum
		o := Interval{
			Start: finite(s.Start), End: finite(s.End), Seconds: finite(s.Seconds),
			Bytes: toInt64(s.Bytes), Bps: finite(s.BitsPerSecond), Omitted: s.Omitted,
			Packets: ptrInt64(s.Packets), LostPackets: ptrInt64(s.LostPackets),
		}
		if s.Retransmits != nil {
			o.Retransmits = toInt64(*s.Retransmits)
		}
		if s.LostPackets != nil && o.Packets > 0 {
			o.LossPercent = 100 * float64(o.LostPackets) / float64(o.Packets)
		}
		out = append(out, o)
	}
	return out
}

func sanitizeCPU(c CPU) CPU {
	return CPU{finite(c.HostTotal), finite(c.HostUser), finite(c.HostSystem),
		finite(c.RemoteTotal), finite(c.RemoteUser), finite(c.RemoteSystem)}
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// toInt64 converts a JSON number to int64, clamping values out of range.
func toInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func toInt(f float64) int {
	v := toInt64(f)
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	if v < math.MinInt32 {
		return math.MinInt32
	}
	return int(v)
}

func ptrInt64(p *float64) int64 {
	if p == nil {
		return 0
	}
	return toInt64(*p)
}

// nonFinite matches the tokens C's printf produces for non-finite doubles,
// which iperf3 has been seen to emit into its JSON (esnet/iperf issue #613:
// `"lost_percent": -nan`).
var nonFinite = regexp.MustCompile(`(?i)^-?(nan|inf(inity)?)`)

// sanitizeNonFinite replaces bare nan/inf tokens outside strings with null,
// returning the cleaned copy and how many it replaced.
func sanitizeNonFinite(data []byte) ([]byte, int) {
	if !bytes.ContainsAny(data, "nNiI") {
		return data, 0
	}
	var out []byte
	n := 0
	inStr, esc := false, false
	last := 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
			continue
		}
		if c != '-' && c != 'n' && c != 'N' && c != 'i' && c != 'I' {
			continue
		}
		m := nonFinite.Find(data[i:])
		if m == nil {
			continue
		}
		// only a value position: previous non-space byte is ':' , '[' or ','
		j := i - 1
		for j >= 0 && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j--
		}
		if j < 0 || (data[j] != ':' && data[j] != '[' && data[j] != ',') {
			continue
		}
		out = append(out, data[last:i]...)
		out = append(out, "null"...)
		i += len(m) - 1
		last = i + 1
		n++
	}
	if n == 0 {
		return data, 0
	}
	return append(out, data[last:]...), n
}

func snippet(data []byte) string {
	s := bytes.TrimSpace(data)
	if i := bytes.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120]
	}
	if len(s) == 0 {
		return "empty input"
	}
	return "starts " + strconv.Quote(string(s))
}
