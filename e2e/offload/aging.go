package offload

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The aging profile (issue 38 item 4): a flow runs, idles longer than the
// kernel's flowtable timeout (30 s) and OVS's max-idle (10 s by default),
// and the same 5-tuple restarts; the time until its datapath flows are
// back, and until they are in hardware, is measured from dumps taken every
// poll after the restart. The judges here are pure: the harness dumps.
//
// Recorded on a private OVS 3.1 (userspace datapath) by
// testdata/record-aging-frag.sh: during the flow
//
//	ufid:486ec055-..., ...,in_port(o38f-pa),...,eth(src=02:00:c6:12:27:01,dst=02:00:c6:12:27:02),
//	eth_type(0x0800),ipv4(src=198.18.39.1/0.0.0.0,...,proto=17,...,frag=no),udp(src=40003,dst=5201),
//	packets:1790, bytes:2581180, used:0.001s, dp:ovs, actions:o38f-pb
//
// 2 s after it the same flow with used:2.097s (too short an idle: not aged
// out), after 14 s nothing, and from the restart on the same flow again:
// OVS's ufid is a hash of the match, so the same 5-tuple gets the same
// ufid — a ufid seen before and after proves nothing about aging; the dump
// between them that lacks it does.

// Tuple is a flow's 5-tuple as the harness pinned it: the client's address
// and port (iperf3 --cport) to the server's.
type Tuple struct {
	Proto            int // 17 UDP, 6 TCP
	Src, Dst         netip.Addr
	SrcPort, DstPort int
}

func (t Tuple) String() string {
	p := strconv.Itoa(t.Proto)
	switch t.Proto {
	case 17:
		p = "udp"
	case 6:
		p = "tcp"
	}
	return fmt.Sprintf("%s %s:%d -> %s:%d", p, t.Src, t.SrcPort, t.Dst, t.DstPort)
}

// Reverse is the tuple of the other direction.
func (t Tuple) Reverse() Tuple {
	return Tuple{Proto: t.Proto, Src: t.Dst, Dst: t.Src, SrcPort: t.DstPort, DstPort: t.SrcPort}
}

// exactValue reads a key=value of a match, "value" or "value/mask": ok
// when the value is matched exactly (no mask, or a mask of all ones);
// wild when the mask is zero (the field is wildcarded).
func exactValue(v string) (value string, exact, wild bool) {
	val, mask, masked := strings.Cut(v, "/")
	if !masked {
		return val, true, false
	}
	switch strings.ToLower(mask) {
	case "255.255.255.255", "0xffff", "0xff", "65535", "255":
		return val, true, false
	case "0.0.0.0", "0", "0x0", "0/0", "::":
		return val, false, true
	}
	return val, false, false
}

// admits reports whether the flow's IPv4 and L4 matches could carry the
// tuple's packets (a wildcarded field admits anything), and ports whether
// it matches both L4 ports exactly (then it is the tuple's own flow and no
// other's). A flow of another ethertype, protocol, address or port, or
// one that matches later fragments only (no L4 header), does not admit it.
func (f DpctlFlow) admits(t Tuple) (ok, ports bool) {
	et, _ := f.ipEthType()
	if !strings.HasPrefix(strings.ToLower(et), "0x0800") {
		return false, false
	}
	var ip, l4 string
	l4Key := map[int]string{17: "udp", 6: "tcp"}[t.Proto]
	for _, m := range f.l3Fields() {
		switch m.Key {
		case "ipv4":
			ip = m.Value
		case l4Key:
			l4 = m.Value
		}
	}
	if fr := f.Frag(); fr == FragLater {
		return false, false
	}
	for _, kv := range strings.Split(ip, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		val, exact, _ := exactValue(v)
		if !exact {
			continue
		}
		switch k {
		case "src", "dst":
			want := t.Src
			if k == "dst" {
				want = t.Dst
			}
			if a, err := netip.ParseAddr(val); err == nil && a != want {
				return false, false
			}
		case "proto":
			if n, err := strconv.Atoi(val); err == nil && n != t.Proto {
				return false, false
			}
		}
	}
	exactPorts := 0
	for _, kv := range strings.Split(l4, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		val, exact, _ := exactValue(v)
		if !exact || (k != "src" && k != "dst") {
			continue
		}
		want := t.SrcPort
		if k == "dst" {
			want = t.DstPort
		}
		n, err := strconv.Atoi(val)
		if err != nil {
			continue
		}
		if n != want {
			return false, false
		}
		exactPorts++
	}
	return true, exactPorts == 2
}

// TupleFlows are the flows of one dump that carry the tuple's direction:
// their exact eth src and dst are the client's and the server's MACs and
// their IP and L4 matches admit the tuple. exact counts those that match
// both of its ports exactly (a firewall's flows); without any, the
// datapath wildcards the ports and the flows are the direction's IP flows.
func TupleFlows(flows []DpctlFlow, clientMAC, serverMAC string, t Tuple) (out []DpctlFlow, exact int) {
	c, errC := normalizeMAC(clientMAC)
	s, errS := normalizeMAC(serverMAC)
	if errC != nil || errS != nil {
		return nil, 0
	}
	for _, f := range flows {
		src, e1 := normalizeMAC(f.EthSrc)
		dst, e2 := normalizeMAC(f.EthDst)
		if e1 != nil || e2 != nil || src != c || dst != s {
			continue
		}
		if ok, ports := f.admits(t); ok {
			out = append(out, f)
			if ports {
				exact++
			}
		}
	}
	return out, exact
}

// JudgeBeforeIdle reads a dump taken just after the first flow ended,
// before the idle: the tuple's flows of the flow's direction must be
// installed and have counted packets, or there is nothing to age (a flow
// never in the datapath is "gone" after any idle). ok false says why.
func JudgeBeforeIdle(flows []DpctlFlow, clientMAC, serverMAC string, t Tuple) (ok bool, why string) {
	fw, exact := TupleFlows(flows, clientMAC, serverMAC, t)
	var packets uint64
	for _, f := range fw {
		packets += f.Packets
	}
	if len(fw) == 0 || packets == 0 {
		return false, fmt.Sprintf("not an aging measurement: no datapath flow of %s counted packets before the idle (%d flows of it): nothing to age", t, len(fw))
	}
	how := "matching its ports exactly"
	if exact == 0 {
		how = "its direction's IP flows (ports wildcarded)"
	}
	return true, fmt.Sprintf("%d flows of %s before the idle, %s, %d packets", len(fw), t, how, packets)
}

// AgedOut is the aging profile's look after the idle: a dump of one
// hypervisor's datapath flows.
type AgedOut struct {
	Aged bool
	// Remaining are the tuple's flows (either direction) still installed.
	Remaining int
	// Leaked: one of them was used inside the idle (traffic of the tuple,
	// or that its flows admit, went on while the flow was meant to idle).
	Leaked bool
	Reason string
}

// JudgeAgedOut reads a dump taken after the flow idled for idle: aged out
// when no flow of either direction of the tuple (TupleFlows) is installed.
// A flow still there is no aging: used inside the idle, the idle was not
// one (traffic leaked); used longer ago, it outlived the idle (the idle
// was too short for this datapath's max-idle, or the revalidator kept it).
func JudgeAgedOut(flows []DpctlFlow, clientMAC, serverMAC string, t Tuple, idle time.Duration) AgedOut {
	fw, _ := TupleFlows(flows, clientMAC, serverMAC, t)
	bw, _ := TupleFlows(flows, serverMAC, clientMAC, t.Reverse())
	left := append(fw, bw...)
	if len(left) == 0 {
		return AgedOut{Aged: true, Reason: fmt.Sprintf("no datapath flow of %s (either direction) after %s of idle: aged out", t, idle)}
	}
	a := AgedOut{Remaining: len(left)}
	var words []string
	for _, f := range left {
		ago, ok := f.usedAgo()
		w := fmt.Sprintf("%s used:%s", f.stageLabel(flowHardware(f, false)), f.Used)
		switch {
		case ok && ago < idle:
			a.Leaked = true
			w += fmt.Sprintf(" (inside the idle of %s)", idle)
		case !ok && f.Used != "never":
			w += " (no used: time)"
		}
		words = append(words, w)
	}
	if a.Leaked {
		a.Reason = fmt.Sprintf("not an aging measurement: %d flows of %s still installed after %s of idle and used inside it (traffic leaked into the idle): %s", len(left), t, idle, strings.Join(words, "; "))
	} else {
		a.Reason = fmt.Sprintf("not an aging measurement: %d flows of %s still installed after %s of idle, not used inside it: they did not age out (an idle shorter than this datapath's max-idle?): %s", len(left), t, idle, strings.Join(words, "; "))
	}
	return a
}

// AgingSample is one dump of the timeline after the restart: Start and End
// are when the dump command was sent and when its answer came, from the
// restarted client's launch.
type AgingSample struct {
	Start, End time.Duration
	Flows      []DpctlFlow
}

// ReinstallInput is the timeline of one hypervisor after the restart.
type ReinstallInput struct {
	Samples              []AgingSample
	ClientMAC, ServerMAC string
	Tuple                Tuple
	// Software: the hypervisor's datapath forwards in software by
	// construction (the userspace datapath, or a baseline run): "in
	// hardware" is never, stated as such, not a failure.
	Software bool
	// Network is the run's network type (DpctlSamples.Network).
	Network string
}

// Reinstall is when the restarted flow was back.
type Reinstall struct {
	// InDatapath is the first sample's End at which a flow of the tuple's
	// direction was installed and counted packets, from the client's
	// launch; Resolution is that End less the Start of the sample before
	// (the flow appeared between them). nil: never within the timeline.
	InDatapath, InDatapathResolution *time.Duration
	// InHardware is the End of the first sample of the run of samples in
	// which OVS claims the tuple's flows in hardware (offloaded:yes) that
	// ends in proof — JudgeDpctl over a sample and the one before it says
	// offloaded (every stage claimed, counters grown) at Proven —, and
	// InHardwareResolution that End less the Start of the sample before.
	// The claim, not the proof, dates it: a hardware rule's counters reach
	// tc with the driver's delay (mlx5 reads them every second), so the
	// growth that proves it comes up to that much later. nil: never
	// proven (Reason says why).
	InHardware, InHardwareResolution, Proven *time.Duration
	// ExactPorts: the flows matched the tuple's ports exactly (else the
	// datapath wildcards them and the flows are the direction's IP flows).
	ExactPorts bool
	Verdict    results.Verdict // of the last pair of samples
	Reason     string
}

// JudgeReinstall reads the timeline after the restart. The flows must be
// gone before it (JudgeAgedOut): a flow there from the first sample on is
// named, since its time says nothing of a re-install.
func JudgeReinstall(in ReinstallInput) Reinstall {
	var r Reinstall
	if len(in.Samples) == 0 {
		r.Verdict, r.Reason = results.VerdictInconclusive, "no dump after the restart"
		return r
	}
	only := func(flows []DpctlFlow) []DpctlFlow { return tupleOnly(flows, in.ClientMAC, in.ServerMAC, in.Tuple) }
	claimFrom := -1 // the first sample of the current run of claimed samples
	var prevStart time.Duration
	var notes []string
	for i, s := range in.Samples {
		fw, exact := TupleFlows(s.Flows, in.ClientMAC, in.ServerMAC, in.Tuple)
		if exact > 0 {
			r.ExactPorts = true
		}
		var counted bool
		claimed := len(fw) > 0
		for _, f := range fw {
			if f.Packets > 0 {
				counted = true
			}
			if flowHardware(f, false) != flowHW {
				claimed = false
			}
		}
		if i == 0 && len(fw) > 0 {
			notes = append(notes, fmt.Sprintf("the tuple's flows were installed at the first dump (%s after the launch)", s.End.Round(time.Millisecond)))
		}
		if counted && r.InDatapath == nil {
			at, res := s.End, s.End-prevStart
			if i == 0 {
				res = s.End
			}
			r.InDatapath, r.InDatapathResolution = &at, &res
		}
		switch {
		case !claimed:
			claimFrom = -1
		case claimFrom < 0:
			claimFrom = i
		}
		if i > 0 && r.InHardware == nil && claimed && !in.Software {
			v, _, _ := JudgeDpctlBasis(DpctlSamples{Offloaded: [][]DpctlFlow{only(in.Samples[i-1].Flows), only(s.Flows)}, Network: in.Network,
				OneWay: &OneWay{From: in.ClientMAC, To: in.ServerMAC}}, []string{in.ClientMAC, in.ServerMAC})
			if v == results.VerdictOffloaded {
				c := in.Samples[claimFrom]
				at, res, proven := c.End, c.End, s.End
				if claimFrom > 0 {
					res = c.End - in.Samples[claimFrom-1].Start
				}
				r.InHardware, r.InHardwareResolution, r.Proven = &at, &res, &proven
			}
		}
		prevStart = s.Start
	}
	n := len(in.Samples)
	last := in.Samples[n-1]
	span := fmt.Sprintf("%d dumps over %s after the launch", n, last.End.Round(time.Millisecond))
	if n > 1 {
		r.Verdict, r.Reason, _ = JudgeDpctlBasis(DpctlSamples{Offloaded: [][]DpctlFlow{only(in.Samples[n-2].Flows), only(last.Flows)}, Network: in.Network,
			OneWay: &OneWay{From: in.ClientMAC, To: in.ServerMAC}}, []string{in.ClientMAC, in.ServerMAC})
	} else {
		r.Verdict, r.Reason = results.VerdictInconclusive, "one dump after the restart: no growth to judge"
	}
	ms := func(d *time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
	var head []string
	if r.InDatapath == nil {
		head = append(head, fmt.Sprintf("in the datapath: never within %s", span))
	} else {
		head = append(head, fmt.Sprintf("in the datapath: %s after the launch (resolution %s)", ms(r.InDatapath), ms(r.InDatapathResolution)))
	}
	switch {
	case in.Software:
		head = append(head, "in hardware: never — software datapath")
	case r.InHardware == nil:
		head = append(head, fmt.Sprintf("in hardware: never within %s", span))
	default:
		head = append(head, fmt.Sprintf("in hardware: %s after the launch (resolution %s; claimed by OVS from then, its counters' growth proved it at %s)", ms(r.InHardware), ms(r.InHardwareResolution), ms(r.Proven)))
	}
	if !r.ExactPorts {
		notes = append(notes, "the datapath flows do not match the L4 ports (wildcarded): the tuple's direction is its IP flows between the guests; iperf3's own ports prove the 5-tuple")
	}
	r.Reason = strings.Join(append(head, notes...), "; ") + "; last two dumps: " + string(r.Verdict) + ": " + r.Reason
	return r
}

// tupleOnly drops the flows between the two guests (their exact MACs,
// either way) that cannot carry the tuple or its reverse — another
// protocol or port, the iperf3 control connection when the datapath
// tells it apart —, so that the judge reads the tuple's pipelines; stages
// that match no MAC (after conntrack) are kept.
func tupleOnly(flows []DpctlFlow, clientMAC, serverMAC string, t Tuple) []DpctlFlow {
	c, errC := normalizeMAC(clientMAC)
	s, errS := normalizeMAC(serverMAC)
	if errC != nil || errS != nil {
		return flows
	}
	out := make([]DpctlFlow, 0, len(flows))
	for _, f := range flows {
		src, e1 := normalizeMAC(f.EthSrc)
		dst, e2 := normalizeMAC(f.EthDst)
		switch {
		case e1 != nil || e2 != nil:
		case src == c && dst == s:
			if ok, _ := f.admits(t); !ok {
				continue
			}
		case src == s && dst == c:
			if ok, _ := f.admits(t.Reverse()); !ok {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// SameTuple compares the 5-tuples iperf3 reported for the first run and
// the restart ("" when the same): a restart from another client port, or
// to another server, is not the same flow.
func SameTuple(first, restart Tuple) string {
	if first == restart {
		return ""
	}
	return fmt.Sprintf("the restart is not the same flow: %s, the first run %s", restart, first)
}

// MaxIdleCommand reads OVS's max-idle on a hypervisor (ms; OVS's default
// 10000 when the key is unset, which ovs-vsctl answers with exit 1 and
// `no key "max-idle" in Open_vSwitch record "." column other_config`).
const MaxIdleCommand = "ovs-vsctl get Open_vSwitch . other_config:max-idle"

// DefaultMaxIdle is OVS's max-idle when other_config:max-idle is unset
// (ofproto/ofproto.h OFPROTO_MAX_IDLE_DEFAULT).
const DefaultMaxIdle = 10 * time.Second

// ParseMaxIdle reads MaxIdleCommand's answer: the value and how it was
// known ("other_config:max-idle", "unset: OVS's default 10s"), or
// OVS's default with why it could not be read (source starts "unread").
//
//	"15000"                      (exit 0: set, quoted)
//	ovs-vsctl: no key "max-idle" in Open_vSwitch record "." column other_config   (exit 1)
func ParseMaxIdle(stdout, stderr []byte, exit int) (time.Duration, string) {
	out := strings.Trim(strings.TrimSpace(string(stdout)), `"`)
	errText := strings.TrimSpace(string(stderr))
	switch {
	case exit == 0:
		ms, err := strconv.ParseUint(out, 10, 32)
		if err != nil || ms == 0 {
			return DefaultMaxIdle, fmt.Sprintf("unread (other_config:max-idle %q is no number of ms): OVS's default %s assumed", out, DefaultMaxIdle)
		}
		return time.Duration(ms) * time.Millisecond, "other_config:max-idle"
	case strings.Contains(errText, `no key "max-idle"`):
		return DefaultMaxIdle, fmt.Sprintf("unset: OVS's default %s", DefaultMaxIdle)
	}
	if i := strings.IndexByte(errText, '\n'); i >= 0 {
		errText = errText[:i]
	}
	return DefaultMaxIdle, fmt.Sprintf("unread (exit %d: %s): OVS's default %s assumed", exit, errText, DefaultMaxIdle)
}

// AgingDumpCommand is the aging profile's dump of a hypervisor's datapath
// flows: with -m, so that dp: and offloaded: tell hardware from software.
const AgingDumpCommand = cmdDpctlAll
