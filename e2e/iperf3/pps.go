package iperf3

import (
	"fmt"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Packet rates of a UDP result, and how they were counted.
//
// iperf3 counts a UDP datagram in its sender `packets` (and gives it a
// sequence number) before it knows whether the send succeeded. Before
// iperf3 3.18 a send that failed with EAGAIN/EINTR (a full socket buffer,
// which an unlimited -b 0 sender meets) still counted: the sender's packet
// count is then too high, and the receiver, seeing the sequence gap, counts
// a datagram that never left as lost. The fix is named in iperf3's own
// release notes, esnet/iperf RELNOTES.md "iperf-3.18 2024-12-13": "UDP
// packets per second now reports the correct number of packets, by
// reporting NET_SOFTERROR if there's a EAGAIN/EINTR errno if no data was
// sent (#1367/PR#1379)"; iperf-3.15 had a first part of it ("A bug in
// counting UDP messages has been fixed (PR #1367, PR #1380)": esnet/iperf
// PR #1380 "Do not count UDP messages that were not sent"), which only
// takes effect once the write returns the soft error (PR #1379, in 3.18).
// The byte counts were never affected: only what was written or read is
// added to them, and every datagram carries exactly -l payload bytes.
//
// So, for iperf3 < 3.18 (the lab's guests run 3.12) the packets are derived
// from bytes / datagram length, and the datagrams counted but never sent
// (sender packets − sent bytes / length) are taken off the receiver's lost
// count; from 3.18 on iperf3's own counts are used. Basis says which.
// On the lab's 3.12 (testdata/v3.12-udp-*-l64.json) the two agree exactly:
// a veth sender never met EAGAIN, so there the correction is 0.
// The rates are results.PacketRates, the schema's type.

// PacketCountsFixedIn is the first iperf3 whose UDP packet counts exclude
// datagrams that were not sent (see Packets).
var PacketCountsFixedIn = Version{Major: 3, Minor: 18}

// CountsPackets reports whether iperf3 version v ("iperf 3.18", the JSON's
// start.version) counts UDP packets correctly; an unreadable version is
// treated as not.
func CountsPackets(v string) bool {
	ver, err := ParseVersion(v)
	return err == nil && ver.AtLeast(PacketCountsFixedIn)
}

// Packets derives the packet rates of a UDP result (one process or a
// SumResults). It fails for TCP, for a result without a datagram length or
// durations, and for counts that contradict each other (more arrived than
// sent), rather than print a made-up rate.
func Packets(r Result) (results.PacketRates, error) {
	p := results.PacketRates{LengthBytes: r.BlockSize}
	switch {
	case r.Protocol != UDP:
		return p, fmt.Errorf("packet rates: %s result, only UDP counts datagrams", r.Protocol)
	case r.BlockSize <= 0:
		return p, fmt.Errorf("packet rates: no datagram length (test_start.blksize %d)", r.BlockSize)
	case r.SenderSeconds <= 0 || r.ReceiverSeconds <= 0:
		return p, fmt.Errorf("packet rates: sender %.3f s, receiver %.3f s: no duration to divide by", r.SenderSeconds, r.ReceiverSeconds)
	case r.DeliveredDerived:
		return p, fmt.Errorf("packet rates: iperf3 %q has no receiver byte count (< 3.11)", r.Version)
	}
	l := int64(r.BlockSize)
	if CountsPackets(r.Version) {
		p.Sent = r.SenderPackets
		p.Arrived = r.ReceiverPackets - r.LostPackets
		p.Lost = r.LostPackets
		p.Basis = fmt.Sprintf("iperf3 packet counts (%s)", r.Version)
	} else {
		p.Sent = r.BytesSent / l
		p.Arrived = r.BytesReceived / l
		p.Unsent = max(0, r.SenderPackets-p.Sent)
		p.Lost = max(0, r.LostPackets-p.Unsent)
		p.Basis = fmt.Sprintf("bytes / %d B datagrams (%s < 3.18 counts datagrams it failed to send)", r.BlockSize, r.Version)
		if p.Unsent > 0 {
			p.Basis += fmt.Sprintf("; %d counted but unsent taken off the lost", p.Unsent)
		}
	}
	if p.Sent < 0 || p.Arrived < 0 {
		return p, fmt.Errorf("packet rates: negative counts (sent %d, arrived %d)", p.Sent, p.Arrived)
	}
	if p.Arrived > p.Sent {
		return p, fmt.Errorf("packet rates: %d datagrams arrived of %d sent (%s)", p.Arrived, p.Sent, p.Basis)
	}
	p.OfferedPps = float64(p.Sent) / r.SenderSeconds
	p.DeliveredPps = float64(p.Arrived) / r.ReceiverSeconds
	if total := p.Arrived + p.Lost; total > 0 {
		p.LossPercent = 100 * float64(p.Lost) / float64(total)
	}
	return p, nil
}
