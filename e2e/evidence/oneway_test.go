package evidence

import (
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
)

// The evidence window tells the tc and dpctl checks a UDP flow's direction
// (the iperf3 client's guest to the server's, the server being the guest
// whose data address the run input names), so that the return direction's
// flat rules read idle, as expected (offload.OneWay). TCP, or a server
// that cannot be told, gives none: both directions are judged.
func TestWindowOneWay(t *testing.T) {
	w := Window{Config: &config.Config{}}
	w.Guests[0] = Guest{MAC: "fa:16:3e:4a:11:01", DataIP: "10.0.0.1"}
	w.Guests[1] = Guest{MAC: "fa:16:3e:4a:11:02", DataIP: "10.0.0.2"}
	server := "10.0.0.1"
	w.Iperf = func(p iperf3.Profile, _ time.Duration) iperf3.RunInput {
		return iperf3.RunInput{ServerAddr: server, Profile: p}
	}
	udp, tcp := iperf3.Profile{Protocol: iperf3.UDP}, iperf3.Profile{Protocol: iperf3.TCP}
	if ow := w.oneWay(udp); ow == nil || ow.From != "fa:16:3e:4a:11:02" || ow.To != "fa:16:3e:4a:11:01" {
		t.Errorf("UDP to guest 0: %+v", ow)
	}
	server = "10.0.0.2"
	if ow := w.oneWay(udp); ow == nil || ow.From != "fa:16:3e:4a:11:01" || ow.To != "fa:16:3e:4a:11:02" {
		t.Errorf("UDP to guest 1: %+v", ow)
	}
	if ow := w.oneWay(tcp); ow != nil {
		t.Errorf("TCP: %+v", ow)
	}
	for _, s := range []string{"10.0.0.9", ""} {
		server = s
		if ow := w.oneWay(udp); ow != nil {
			t.Errorf("server %q: %+v", s, ow)
		}
	}
	w.Guests[1].DataIP, server = "10.0.0.1", "10.0.0.1"
	if ow := w.oneWay(udp); ow != nil {
		t.Errorf("both guests at the server's address: %+v", ow)
	}
}

// offload.flow_bitrate holds each stream of a sustained flow to the cap: an
// unlimited profile (TCP, UDP -b 0) and a faster one get it, a slower one
// keeps its own rate, and 0 leaves every profile as it is.
func TestCappedFlows(t *testing.T) {
	for _, c := range []struct {
		own, cap, want int64
	}{
		{0, 0, 0},
		{0, 100_000_000, 100_000_000},
		{500_000_000, 100_000_000, 100_000_000},
		{50_000_000, 100_000_000, 50_000_000},
		{500_000_000, 0, 500_000_000},
	} {
		for _, proto := range []iperf3.Protocol{iperf3.TCP, iperf3.UDP} {
			p := iperf3.Profile{ID: "x", Protocol: proto, Streams: 2, BitratePerStream: c.own}
			got := capped(p, c.cap)
			if got.BitratePerStream != c.want || got.Streams != 2 || got.Protocol != proto || got.ID != "x" {
				t.Errorf("%s at %d bit/s a stream, capped at %d: %+v, want %d a stream and the rest as it was", proto, c.own, c.cap, got, c.want)
			}
		}
	}
}
