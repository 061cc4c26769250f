// Package iperf3 holds the methodology's traffic profiles, a pure parser of
// `iperf3 -J` client output (iperf3 3.9 through current), the arithmetic to
// combine a profile split over several iperf3 processes, interval statistics,
// and a runner that drives iperf3 on two guests through remote.Runner.
//
// Definitions used everywhere in this package (they follow the methodology,
// shared/seeds/asap2-direct-performance.txt):
//
//   - Offered: the rate the sender generated (iperf3 sender summary).
//   - Delivered: the rate that arrived at the peer (iperf3 receiver summary).
//   - Loss (UDP): the share of datagrams that did not arrive, see Result.LossPercent.
//   - TCP rows are a single rate: goodput = delivered; loss is 0 by definition
//     (retransmissions hide drops) and Retransmits is reported beside it.
//
// Where things are:
//
//   - profiles.go: the seed's catalogue, built from results.SeedShapes;
//     pps_profiles.go: the small-packet family (PPSCatalogue, not the seed's).
//   - parse.go: the pure parser of iperf3 -J; runner.go: server on one guest,
//     client on the other, a profile split over processes.
//   - guards.go: iperf3's own dead-peer timeouts by version
//     (--connect-timeout, --rcv-timeout, --snd-timeout).
//   - setup.go: a UDP run lost at stream setup (esnet/iperf#862) is run again,
//     bounded and recorded; a TCP client that failed before its test began
//     counts its streams (StreamsConnected), and its server's dropped stream
//     is named (StreamsDropped: iperf3 3.16+ closes a stream whose cookie is
//     10 s late, uncounted, and waits for it until its receive timeout).
//   - pps.go: the packet rates of a UDP result (Packets; bytes / length before
//     iperf3 3.18, which miscounts failed sends).
//   - datastop.go: when a client's data stopped, from its own JSON
//     (DescribeDataStop, the look's sentence).
package iperf3

import (
	"fmt"
	"strconv"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Protocol is the transport of a profile or a parsed run.
type Protocol string

// Protocols iperf3 reports in start.test_start.protocol.
const (
	TCP Protocol = "TCP"
	UDP Protocol = "UDP"
)

// Table names the methodology table a profile's row belongs to.
type Table string

// The three result tables of the methodology.
const (
	TableTCP          Table = "TCP throughput"
	TableUDPUnlimited Table = "UDP unlimited offered load (-u -b0)"
	TableUDPCapped    Table = "UDP capped load (500 Mbit/s per stream)"
	// TableConnections is the connection-scale profile's (issue 22), not
	// one of the methodology's.
	TableConnections Table = "Connection scale"
)

// Profile is one row of the methodology: what iperf3 is asked to do.
type Profile struct {
	// ID is stable and used in config files and results (e.g. "tcp-p15").
	ID string `json:"id"`
	// Name is the spec name; it follows the seed so that
	// `ginkgo -focus "TCP.*15 streams"` selects it.
	Name string `json:"name"`
	// Row is the row label exactly as the seed's table prints it.
	Row      string   `json:"row"`
	Protocol Protocol `json:"protocol"`
	// Streams is iperf3 -P.
	Streams int `json:"streams"`
	// BitratePerStream is iperf3 -b in bit/s. iperf3 applies -b to each
	// stream separately (man iperf3: "If there are multiple streams (-P
	// flag), the throughput limit is applied separately to each stream";
	// src/iperf_api.c iperf_check_throttle compares each stream's own
	// bytes_sent against settings->rate). 0 means unlimited: for UDP the
	// runner passes -b 0, for TCP no -b at all.
	BitratePerStream int64 `json:"bitrate_per_stream_bps"`
	// Length is iperf3 -l (payload bytes per datagram / write); 0 = iperf3's default.
	Length int   `json:"length"`
	Table  Table `json:"table"`
	// ClientPort pins the client's data port (iperf3 --cport, 3.1+): the
	// aging profile's restart is the same 5-tuple. 0 = any; with a port
	// the profile is one stream in one process.
	ClientPort int `json:"client_port,omitempty"`
}

// OfferedCapBps is the aggregate target of a capped profile
// (BitratePerStream × Streams), 0 for unlimited profiles.
func (p Profile) OfferedCapBps() int64 { return p.BitratePerStream * int64(p.Streams) }

// ClientArgs are the profile's iperf3 client flags for a process carrying
// streams streams (the runner may split a profile over several processes).
func (p Profile) ClientArgs(streams int) []string {
	args := []string{"-P", strconv.Itoa(streams)}
	if p.Protocol == UDP {
		args = append(args, "-u", "-b", strconv.FormatInt(p.BitratePerStream, 10))
	} else if p.BitratePerStream > 0 {
		args = append(args, "-b", strconv.FormatInt(p.BitratePerStream, 10))
	}
	if p.Length > 0 {
		args = append(args, "-l", strconv.Itoa(p.Length))
	}
	if p.ClientPort > 0 {
		args = append(args, "--cport", strconv.Itoa(p.ClientPort))
	}
	return args
}

// capped500M is the capped profiles' per-stream bitrate; the names and
// TableUDPCapped say 500M, and TestCatalogueIsTheSeedShapes holds it to
// results.SeedShapes.
const capped500M = 500_000_000

func tcpProfile(n int) Profile {
	return Profile{
		ID:       fmt.Sprintf("tcp-p%d", n),
		Name:     fmt.Sprintf("TCP %s (-P%d)", streamsWord(n), n),
		Row:      fmt.Sprintf("%s (`-P%d`)", streamsWord(n), n),
		Protocol: TCP, Streams: n, Table: TableTCP,
	}
}

func udpUnlimited(n, length int) Profile {
	p := Profile{Protocol: UDP, Streams: n, Length: length, Table: TableUDPUnlimited}
	if length == 0 {
		p.ID = fmt.Sprintf("udp-b0-p%d", n)
		p.Name = fmt.Sprintf("UDP unlimited %s (-P%d)", streamsWord(n), n)
		p.Row = fmt.Sprintf("%s (`-P%d`)", streamsWord(n), n)
	} else {
		p.ID = fmt.Sprintf("udp-b0-p%d-l%d", n, length)
		p.Name = fmt.Sprintf("UDP unlimited %s, %d B (-P%d -l%d)", streamsWord(n), length, n, length)
		p.Row = fmt.Sprintf("%s, %d B (`-P%d -l%d`)", streamsWord(n), length, n, length)
	}
	return p
}

func udpCapped(n, length int) Profile {
	p := Profile{Protocol: UDP, Streams: n, BitratePerStream: capped500M, Length: length, Table: TableUDPCapped}
	if length == 0 {
		p.ID = fmt.Sprintf("udp-500m-p%d", n)
		p.Name = fmt.Sprintf("UDP capped 500M %s", streamsWord(n))
		p.Row = streamsWord(n)
	} else {
		p.ID = fmt.Sprintf("udp-500m-p%d-l%d", n, length)
		p.Name = fmt.Sprintf("UDP capped 500M %s, %d B", streamsWord(n), length)
		p.Row = fmt.Sprintf("%s, %d B", streamsWord(n), length)
	}
	return p
}

func streamsWord(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}

// Catalogue returns the methodology's 14 profiles in the seed's table order
// (results.SeedShapes). The slice is a fresh copy on every call.
func Catalogue() []Profile {
	shapes := results.SeedShapes()
	out := make([]Profile, 0, len(shapes))
	for _, sh := range shapes {
		switch {
		case sh.Protocol == results.ProtoTCP:
			out = append(out, tcpProfile(sh.Streams))
		case sh.BitrateBps == 0:
			out = append(out, udpUnlimited(sh.Streams, sh.LengthBytes))
		default:
			out = append(out, udpCapped(sh.Streams, sh.LengthBytes))
		}
	}
	return out
}

// Lookup returns the catalogue or small-packet (PPSCatalogue) profile
// with the given ID.
func Lookup(id string) (Profile, bool) {
	for _, p := range append(Catalogue(), PPSCatalogue()...) {
		if p.ID == id {
			return p, true
		}
	}
	return Profile{}, false
}
