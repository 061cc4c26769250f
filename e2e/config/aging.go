package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(200, section{defaults: (*Config).applyAgingDefaults, validate: (*validator).aging,
		metric: results.IsAgingMetric, profile: (*validator).agingProfile}, results.FamilyAging, results.FamilyFragments)
}

// Aging is the aging and re-offload profile (issue 38 item 4): a UDP flow
// from a pinned client port (iperf3 --cport) runs with the dpctl and tc
// checks, idles longer than the kernel's flowtable timeout and each
// hypervisor's OVS max-idle plus IdleMargin (nothing measured runs while it
// idles), its datapath flows are seen gone, and the same 5-tuple restarts:
// the time until its flows are back in the datapath and in hardware is
// measured from dumps every intervals.aging_sample.poll. Enabled false (the
// default) = no aging profile.
type Aging struct {
	Enabled bool `yaml:"enabled"`
	// RestartDuration is the restarted flow's iperf3 -t (whole seconds >=
	// 2); default 10s. The first flow is an evidence window's flow
	// (offload.flow_duration, the checks inside it).
	RestartDuration time.Duration `yaml:"restart_duration"`
	// Bitrate is the flow's iperf3 -b (bit/s > 0); default 10 Mbit/s: a
	// flow to age, not a load.
	Bitrate int64 `yaml:"bitrate"`
	// ClientPort is the client's source port (iperf3 --cport), the same in
	// both runs: the same 5-tuple; default 41000.
	ClientPort int `yaml:"client_port"`
	// FlowtableTimeout is the kernel's conntrack flowtable timeout
	// (NF_FLOW_TIMEOUT, 30 s); the idle is at least this.
	FlowtableTimeout time.Duration `yaml:"flowtable_timeout"`
	// IdleMargin is added to the longer of FlowtableTimeout and OVS's
	// max-idle as read from each hypervisor (10 s when unset); default 5s.
	IdleMargin time.Duration `yaml:"idle_margin"`
}

// Fragments is the fragment profile (issue 38 item 5): a UDP flow whose
// datagrams are above the tenant network's MTU (read from Neutron), with
// the tc and dpctl checks of offload.checks judged by the fragment judges:
// the fragment flows labelled software by the NIC's design, the others
// judged as usual. Enabled false (the default) = no fragment profile.
type Fragments struct {
	Enabled bool `yaml:"enabled"`
	// Length is the datagram size (iperf3 -l, bytes); 0 = the network's
	// MTU + 1000 (at most 65507). It must exceed the MTU less 28 (IPv4 and
	// UDP headers), checked once the network exists.
	Length int `yaml:"length"`
	// Bitrate is the flow's iperf3 -b (bit/s > 0); default 10 Mbit/s. Low on
	// purpose: the profile proves a label, not a rate, and every datagram
	// whose other fragment is lost waits in the receiver's reassembly queue
	// until ipfrag_time (30 s). At 100 Mbit/s on the lab's userspace
	// datapath 5-30 % of the datagrams lost a fragment, the guest's queue
	// reached net.ipv4.ipfrag_high_thresh (4 MiB) after 7 s and from then on
	// dropped every fragment: iperf3's server saw nothing for 5 s and quit
	// (2026-12-06).
	Bitrate int64 `yaml:"bitrate"`
}

const (
	DefaultAgingRestartDuration  = 10 * time.Second
	DefaultAgingBitrate          = 10_000_000
	DefaultAgingClientPort       = 41000
	DefaultAgingFlowtableTimeout = 30 * time.Second // the kernel's NF_FLOW_TIMEOUT
	DefaultAgingIdleMargin       = 5 * time.Second
	DefaultFragmentsBitrate      = 10_000_000
	// MaxUDPDatagram is the largest UDP payload over IPv4.
	MaxUDPDatagram = 65507
	// FragmentsAutoExtra is what an automatic fragment length adds to the MTU.
	FragmentsAutoExtra = 1000
	// IPv4UDPHeaders are the bytes an IPv4 packet of a UDP datagram adds.
	IPv4UDPHeaders = 28
)

// FragmentLength is the datagram size the fragment profile sends on a
// network of mtu: Length, or mtu + FragmentsAutoExtra (at most
// MaxUDPDatagram); and why it would not fragment ("" when it does).
func (f Fragments) FragmentLength(mtu int) (int, string) {
	n := f.Length
	if n == 0 {
		n = min(mtu+FragmentsAutoExtra, MaxUDPDatagram)
	}
	if mtu > 0 && n <= mtu-IPv4UDPHeaders {
		return n, fmt.Sprintf("fragments.length %d fits in the network's MTU %d (%d bytes of UDP payload): the datagrams would not fragment", n, mtu, mtu-IPv4UDPHeaders)
	}
	return n, ""
}

func (c *Config) applyAgingDefaults() {
	for _, d := range []struct {
		key string
		set func()
	}{
		{"aging.restart_duration", func() { c.Aging.RestartDuration = DefaultAgingRestartDuration }},
		{"aging.bitrate", func() { c.Aging.Bitrate = DefaultAgingBitrate }},
		{"aging.client_port", func() { c.Aging.ClientPort = DefaultAgingClientPort }},
		{"aging.flowtable_timeout", func() { c.Aging.FlowtableTimeout = DefaultAgingFlowtableTimeout }},
		{"aging.idle_margin", func() { c.Aging.IdleMargin = DefaultAgingIdleMargin }},
		{"fragments.bitrate", func() { c.Fragments.Bitrate = DefaultFragmentsBitrate }},
	} {
		if !c.has(d.key) {
			d.set()
		}
	}
}

func (v *validator) aging() {
	a := v.c.Aging
	if a.RestartDuration < 2*time.Second || a.RestartDuration%time.Second != 0 {
		v.bad("aging.restart_duration", "must be whole seconds >= 2 (iperf3 -t of the restart: the re-install is read while it runs)", a.RestartDuration)
	}
	if a.Bitrate <= 0 {
		v.bad("aging.bitrate", "must be > 0 bit/s (iperf3 -b: a flow to age, not a load)", a.Bitrate)
	}
	if a.ClientPort < 1024 || a.ClientPort > 65535 {
		v.bad("aging.client_port", "must be 1024..65535 (iperf3 --cport: the client's source port, the same in both runs)", a.ClientPort)
	} else {
		if first, last := v.c.Traffic.IperfPortRange(); a.ClientPort >= first && a.ClientPort <= last {
			v.bad("aging.client_port", fmt.Sprintf("must not be one of the iperf3 server ports (traffic.port %d .. %d)", first, last), a.ClientPort)
		}
		if a.ClientPort == v.c.Latency.Port {
			v.bad("aging.client_port", "must not be latency.port", a.ClientPort)
		}
	}
	if a.FlowtableTimeout <= 0 {
		v.bad("aging.flowtable_timeout", "must be > 0 (the kernel's NF_FLOW_TIMEOUT is 30s)", a.FlowtableTimeout)
	}
	if a.IdleMargin < time.Second {
		v.bad("aging.idle_margin", "must be >= 1s (OVS's revalidator deletes an idle flow at its next pass after max-idle)", a.IdleMargin)
	}
	if a.Enabled {
		iv := v.c.Intervals[IntervalAgingSample]
		if iv.Timeout > 0 && iv.Poll > 0 && iv.Timeout < 2*iv.Poll {
			v.bad("intervals."+IntervalAgingSample+".timeout", fmt.Sprintf("must be at least twice its poll (%s): the re-install is judged over two dumps", iv.Poll), iv.Timeout)
		}
		if a.RestartDuration > 0 && a.RestartDuration < iv.Timeout {
			v.bad("aging.restart_duration", fmt.Sprintf("must be at least intervals.%s.timeout (%s): the restarted flow runs while its flows are read", IntervalAgingSample, iv.Timeout), a.RestartDuration)
		}
		v.needsDpctl("aging.enabled")
	}
	f := v.c.Fragments
	if f.Length != 0 && (f.Length < 1 || f.Length > MaxUDPDatagram) {
		v.bad("fragments.length", fmt.Sprintf("must be 0 (the network's MTU + %d) or 1..%d bytes (iperf3 -l)", FragmentsAutoExtra, MaxUDPDatagram), f.Length)
	} else if mtu := v.c.Network.MTU; mtu > 0 && f.Length != 0 {
		if _, why := f.FragmentLength(mtu); why != "" {
			v.bad("fragments.length", "must exceed network.mtu less 28: "+why, f.Length)
		}
	}
	if f.Bitrate <= 0 {
		v.bad("fragments.bitrate", "must be > 0 bit/s (iperf3 -b)", f.Bitrate)
	}
	if f.Enabled && !slices.Contains(v.c.Offload.Checks, results.CheckTC) && !slices.Contains(v.c.Offload.Checks, results.CheckDpctl) {
		v.bad("fragments.enabled", "needs tc or dpctl in offload.checks: only they tell a fragment's flow from an unfragmented one", v.c.Offload.Checks)
	}
}

// needsDpctl: a profile that reads the datapath flows needs dpctl among
// offload.checks (the hypervisors are read).
func (v *validator) needsDpctl(key string) {
	if !slices.Contains(v.c.Offload.Checks, results.CheckDpctl) {
		v.bad(key, "needs dpctl in offload.checks: the profile reads the pair's datapath flows", v.c.Offload.Checks)
	}
}

// agingProfile checks a threshold on the aging profile's metrics: it
// names the aging profile (a rule on it in a config that does not run it
// fails at evaluation, "no result": a gate never passes on nothing).
func (v *validator) agingProfile(path, metric, id string) {
	if id != results.AgingProfileID {
		v.bad(path, fmt.Sprintf("must be %s for %s", results.AgingProfileID, metric), id)
	}
}
