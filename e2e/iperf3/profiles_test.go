package iperf3

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The catalogue is the methodology's (shared/seeds/asap2-direct-performance.txt):
// TCP -P1/-P15/-P30; UDP -b0 at 1/15/30 and with -l700 at 15/30; UDP -b 500M
// per stream at 1/15/30 and with -l700 at 1/15/30.
func TestCatalogue(t *testing.T) {
	want := []string{
		"tcp-p1", "tcp-p15", "tcp-p30",
		"udp-b0-p1", "udp-b0-p15", "udp-b0-p30", "udp-b0-p15-l700", "udp-b0-p30-l700",
		"udp-500m-p1", "udp-500m-p15", "udp-500m-p30", "udp-500m-p1-l700", "udp-500m-p15-l700", "udp-500m-p30-l700",
	}
	var got []string
	names := map[string]bool{}
	for _, p := range Catalogue() {
		got = append(got, p.ID)
		if names[p.Name] {
			t.Errorf("duplicate name %q", p.Name)
		}
		names[p.Name] = true
	}
	if !slices.Equal(got, want) {
		t.Fatalf("IDs = %v\nwant %v", got, want)
	}
	p, ok := Lookup("udp-500m-p1-l700")
	if !ok || p.Name != "UDP capped 500M 1 stream, 700 B" || p.Row != "1 stream, 700 B" || p.BitratePerStream != 500_000_000 ||
		p.Length != 700 || p.Streams != 1 || p.Protocol != UDP || p.Table != TableUDPCapped || p.OfferedCapBps() != 500_000_000 {
		t.Errorf("udp-500m-p1-l700 = %+v", p)
	}
	p, _ = Lookup("udp-b0-p30-l700")
	if p.Name != "UDP unlimited 30 streams, 700 B (-P30 -l700)" || p.Row != "30 streams, 700 B (`-P30 -l700`)" || p.BitratePerStream != 0 || p.Table != TableUDPUnlimited {
		t.Errorf("udp-b0-p30-l700 = %+v", p)
	}
	p, _ = Lookup("tcp-p15")
	if p.Name != "TCP 15 streams (-P15)" || p.Row != "15 streams (`-P15`)" || p.Table != TableTCP {
		t.Errorf("tcp-p15 = %+v", p)
	}
	if _, ok := Lookup("tcp-p16"); ok {
		t.Error("Lookup accepted an unknown ID")
	}
}

// Ginkgo focus is a regexp over the spec text: `-focus "TCP.*15 streams"`
// must select exactly the TCP 15-stream profile.
func TestNamesWorkWithGinkgoFocus(t *testing.T) {
	focus := map[string][]string{
		`TCP.*15 streams`:       {"tcp-p15"},
		`UDP unlimited.*700 B`:  {"udp-b0-p15-l700", "udp-b0-p30-l700"},
		`UDP capped.*30 stream`: {"udp-500m-p30", "udp-500m-p30-l700"},
		`TCP 1 stream`:          {"tcp-p1"},
	}
	for re, want := range focus {
		rx := regexp.MustCompile(re)
		var got []string
		for _, p := range Catalogue() {
			if rx.MatchString(p.Name) {
				got = append(got, p.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("focus %q selects %v, want %v", re, got, want)
		}
	}
}

func TestClientArgs(t *testing.T) {
	cases := map[string]string{
		"tcp-p30":           "-P 8",
		"udp-b0-p15":        "-P 8 -u -b 0",
		"udp-b0-p15-l700":   "-P 8 -u -b 0 -l 700",
		"udp-500m-p30-l700": "-P 8 -u -b 500000000 -l 700",
	}
	for id, want := range cases {
		p, _ := Lookup(id)
		if got := strings.Join(p.ClientArgs(8), " "); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
}

// The catalogue is built from results.SeedShapes; the capped profiles'
// bitrate (and the "500M" in their names) is iperf3's own constant, held to
// the shapes here.
func TestCatalogueIsTheSeedShapes(t *testing.T) {
	shapes := results.SeedShapes()
	cat := Catalogue()
	if len(cat) != len(shapes) {
		t.Fatalf("%d profiles, %d seed shapes", len(cat), len(shapes))
	}
	for i, p := range cat {
		got := results.Shape{Protocol: strings.ToLower(string(p.Protocol)), Streams: p.Streams,
			BitrateBps: float64(p.BitratePerStream), LengthBytes: p.Length}
		if got != shapes[i] {
			t.Errorf("profile %s: shape %+v, seed shape %+v", p.ID, got, shapes[i])
		}
	}
}

// A pinned client port is iperf3's --cport, after the profile's other
// flags; a pinned port with more than one stream is refused before
// anything runs (every stream would bind the same port).
func TestClientPortPinned(t *testing.T) {
	p := Profile{ID: "aging", Protocol: UDP, Streams: 1, BitratePerStream: 10_000_000, ClientPort: 41000}
	if got := strings.Join(p.ClientArgs(1), " "); got != "-P 1 -u -b 10000000 --cport 41000" {
		t.Errorf("client args %q", got)
	}
	p.Streams = 2
	in := RunInput{Server: &fakeGuest{}, Client: &fakeGuest{}, ServerAddr: "198.18.10.4", Profile: p, Duration: time.Second, ListenTimeout: time.Second, ListenPoll: time.Second}
	if err := in.validate(); err == nil || !strings.Contains(err.Error(), "--cport") {
		t.Errorf("two streams on one pinned port: %v", err)
	}
}
