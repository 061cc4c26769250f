package iperf3

import (
	"math"
	"os"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) Result {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func same(a, b float64) bool { return near(a, b, 1e-9) }

// The numbers are the recorded files' own (testdata/README.md), worked by hand.
func TestPacketsOnRecorded312(t *testing.T) {
	cases := []struct {
		file                  string
		sent, arrived, lost   int64
		senderS, receiverS    float64
		lossPercentIperf3Says float64 // sum_received.lost_packets / sum_received.packets
	}{
		// -u -b 0 -l 64 -P 1: 769480 sent (49246720 B / 64), 732350 arrived
		// (46870400 B / 64), 37124 lost; receiver packets 769474 (the last
		// 6 were in flight when the receiver stopped counting).
		{"v3.12-udp-b0-p1-l64.json", 769480, 732350, 37124, 5.000016, 5.000099, 100 * 37124.0 / 769474},
		// -P 15: every datagram arrived.
		{"v3.12-udp-b0-p15-l64.json", 826650, 826650, 0, 5.002194, 5.002294, 0},
		// -b 10M: paced, 167 of 97641 lost.
		{"v3.12-udp-10m-p1-l64.json", 97641, 97474, 167, 5.000114, 5.000281, 100 * 167.0 / 97641},
	}
	for _, c := range cases {
		r := parseFile(t, c.file)
		p, err := Packets(r)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if p.Sent != c.sent || p.Arrived != c.arrived || p.Lost != c.lost || p.Unsent != 0 || p.LengthBytes != 64 {
			t.Errorf("%s: got %+v", c.file, p)
		}
		if !same(p.OfferedPps, float64(c.sent)/c.senderS) || !same(p.DeliveredPps, float64(c.arrived)/c.receiverS) {
			t.Errorf("%s: pps %v/%v, want %v/%v", c.file, p.OfferedPps, p.DeliveredPps, float64(c.sent)/c.senderS, float64(c.arrived)/c.receiverS)
		}
		if !same(p.LossPercent, c.lossPercentIperf3Says) || !same(p.LossPercent, r.LossPercent) {
			t.Errorf("%s: loss %v, iperf3 %v, parser %v", c.file, p.LossPercent, c.lossPercentIperf3Says, r.LossPercent)
		}
		if !strings.Contains(p.Basis, "bytes / 64 B") || !strings.Contains(p.Basis, "iperf 3.12") {
			t.Errorf("%s: basis %q must say bytes/length and the version", c.file, p.Basis)
		}
		// bit/s and pps describe the same datagrams: pps × 8 × length is
		// the bit rate iperf3 printed (to the byte count's rounding).
		if math.Abs(p.OfferedPps*8*64-r.OfferedBps) > 1e-6*r.OfferedBps {
			t.Errorf("%s: offered pps %v × 512 != %v bit/s", c.file, p.OfferedPps, r.OfferedBps)
		}
	}
}

// iperf3 < 3.18 counted datagrams whose send failed (EAGAIN): the sender's
// packets exceed bytes/length and the receiver lists the gaps as lost. The
// recorded 3.12 file, edited the way such a run reads: 1000 more sender
// packets than bytes, 1000 more lost.
func TestPacketsBefore318DiscountUnsent(t *testing.T) {
	r := parseFile(t, "v3.12-udp-b0-p1-l64.json")
	r.SenderPackets += 1000
	r.LostPackets += 1000
	r.ReceiverPackets += 1000
	p, err := Packets(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sent != 769480 || p.Unsent != 1000 || p.Lost != 37124 || !strings.Contains(p.Basis, "1000 counted but unsent") {
		t.Fatalf("got %+v", p)
	}
	// The same numbers from a 3.18 iperf3 are its own, trusted as they are.
	r.Version = "iperf 3.18"
	p, _ = Packets(r)
	if p.Sent != 770480 || p.Lost != 38124 || p.Unsent != 0 || !strings.Contains(p.Basis, "packet counts") {
		t.Fatalf("3.18: got %+v", p)
	}
}

// A public iperf3 3.18 UDP client output (testdata/README.md): 5 datagrams
// of 32768 B sent and arrived, none lost.
func TestPacketsOnPublic318(t *testing.T) {
	r := parseFile(t, "v3.18-udp-1m-p1-public.json")
	p, err := Packets(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sent != 5 || p.Arrived != 5 || p.Lost != 0 || !strings.Contains(p.Basis, "iperf3 packet counts (iperf 3.18)") {
		t.Fatalf("got %+v", p)
	}
	if !same(p.OfferedPps, 5/1.005694) || !same(p.DeliveredPps, 5/1.006723) {
		t.Errorf("pps %v %v", p.OfferedPps, p.DeliveredPps)
	}
}

// The public 3.16 sample (92 % loss): bytes/length agree with its counts;
// loss on the receiver's basis (lost / its 2981957 expected), not iperf3's
// lost_percent (lost / the sender's 2981960).
func TestPacketsOnPublic316(t *testing.T) {
	p, err := Packets(parseFile(t, "v3.16-udp-b0-p1-public.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Sent != 2981960 || p.Arrived != 237767 || p.Lost != 2744190 || !same(p.LossPercent, 100*2744190.0/2981957) {
		t.Fatalf("got %+v", p)
	}
}

func TestPacketsRefusesWhatItCannotCount(t *testing.T) {
	udp := parseFile(t, "v3.12-udp-b0-p1-l64.json")
	for name, mod := range map[string]func(*Result){
		"tcp":       func(r *Result) { r.Protocol = TCP },
		"no length": func(r *Result) { r.BlockSize = 0 },
		"no time":   func(r *Result) { r.ReceiverSeconds = 0 },
		"derived":   func(r *Result) { r.DeliveredDerived = true },
		"more arrived than sent": func(r *Result) {
			r.BytesReceived = r.BytesSent + 64
		},
	} {
		r := udp
		mod(&r)
		if p, err := Packets(r); err == nil {
			t.Errorf("%s: no error, got %+v", name, p)
		}
	}
}

// A profile split over processes sums bytes and packets (SumResults):
// the packet rate of the sum is the sum of the rates.
func TestPacketsOfASplitProfile(t *testing.T) {
	a := parseFile(t, "v3.12-udp-b0-p1-l64.json")
	b := parseFile(t, "v3.12-udp-b0-p15-l64.json")
	pa, _ := Packets(a)
	pb, _ := Packets(b)
	ps, err := Packets(SumResults([]Result{a, b}))
	if err != nil {
		t.Fatal(err)
	}
	if ps.Sent != pa.Sent+pb.Sent || ps.Arrived != pa.Arrived+pb.Arrived || ps.Lost != pa.Lost+pb.Lost {
		t.Fatalf("sum %+v of %+v and %+v", ps, pa, pb)
	}
	// Seconds are the longest of the processes, so the rate of the sum is
	// at most the sum of the rates, and within the seconds' spread of it.
	if ps.OfferedPps > pa.OfferedPps+pb.OfferedPps || ps.OfferedPps < 0.999*(pa.OfferedPps+pb.OfferedPps) {
		t.Errorf("sum pps %v vs %v + %v", ps.OfferedPps, pa.OfferedPps, pb.OfferedPps)
	}
}

func TestCountsPackets(t *testing.T) {
	for v, want := range map[string]bool{
		"iperf 3.12": false, "iperf 3.17.1": false, "iperf 3.18": true, "iperf 3.18+": true,
		"iperf 3.20": true, "iperf 4.0": true, "": false, "iperf": false, "iperf 3.9.1": false, "iperf 3.100": true,
	} {
		if got := CountsPackets(v); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

func TestPPSCatalogueIsNotTheSeed(t *testing.T) {
	seed := map[string]bool{}
	for _, p := range Catalogue() {
		seed[p.ID] = true
	}
	want := []string{"udp-b0-p1-l64", "udp-b0-p15-l64", "udp-b0-p30-l64", "udp-b0-p1-l700"}
	got := PPSIDs()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("PPS ids %v, want %v", got, want)
	}
	for _, p := range PPSCatalogue() {
		if seed[p.ID] || p.Table != TablePPS || p.Protocol != UDP || p.BitratePerStream != 0 {
			t.Errorf("%+v", p)
		}
		if q, ok := Lookup(p.ID); !ok || q.Table != TablePPS {
			t.Errorf("Lookup(%s) = %+v %v", p.ID, q, ok)
		}
		args := strings.Join(p.ClientArgs(p.Streams), " ")
		if !strings.Contains(args, "-u -b 0") || !strings.Contains(args, "-l ") {
			t.Errorf("%s args %q", p.ID, args)
		}
	}
	if len(Catalogue()) != 14 {
		t.Errorf("the seed's catalogue changed: %d", len(Catalogue()))
	}
	if p, ok := Lookup("udp-b0-p1-l64"); !ok || p.Table != TablePPS {
		t.Errorf("Lookup of a pps id: %+v, %v", p, ok)
	}
}

// FuzzPackets: whatever JSON Parse accepts, the packet rates derived from
// it are counts that add up (arrived ≤ sent, loss a share of arrived +
// lost), finite non-negative rates, and a basis that names the version;
// or an error, never a made-up number.
func FuzzPackets(f *testing.F) {
	for _, name := range []string{"v3.12-udp-b0-p1-l64.json", "v3.12-udp-10m-p1-l64.json", "v3.18-udp-1m-p1-public.json", "v3.12-tcp-p1.json"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			return
		}
		p, err := Packets(r)
		if err != nil {
			return
		}
		if p.Sent < 0 || p.Arrived < 0 || p.Lost < 0 || p.Unsent < 0 || p.Arrived > p.Sent {
			t.Fatalf("counts %+v", p)
		}
		for _, v := range []float64{p.OfferedPps, p.DeliveredPps, p.LossPercent} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("rate %v in %+v", v, p)
			}
		}
		if p.LossPercent > 100 || (p.Lost == 0) != (p.LossPercent == 0) {
			t.Fatalf("loss %v with %d lost", p.LossPercent, p.Lost)
		}
		if !strings.Contains(p.Basis, r.Version) || p.LengthBytes != r.BlockSize || r.Protocol != UDP {
			t.Fatalf("basis %q for %q, length %d of %d", p.Basis, r.Version, p.LengthBytes, r.BlockSize)
		}
		if !CountsPackets(r.Version) && p.Sent*int64(p.LengthBytes) > r.BytesSent {
			t.Fatalf("before 3.18 sent %d × %d exceeds the %d bytes sent", p.Sent, p.LengthBytes, r.BytesSent)
		}
	})
}
