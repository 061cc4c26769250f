package offload

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The tc and dpctl judges look at a pipeline, not at single rules. OVS
// offloads each datapath flow on its own: recirc_id(N) is tc chain N, and
// ct(...),recirc(N) is `ct ... goto chain N` (lib/netdev-offload-tc.c). A
// packet of the guests' flow crosses every stage from the first (chain 0,
// recirc_id(0)) to the one that outputs it, and it is in hardware only
// when every one of them is: a stage the NIC misses hands the packet, and
// every packet after it, to the kernel (mlx5's chain restore). Post-
// conntrack stages often match no MAC at all (eth wildcarded, ct_state
// +trk+est, ct_zone), and a firewall's first stage often matches only the
// source MAC (port security): the pair of a pipeline is read from the MACs
// of all its stages together.

// stageWhere is where a stage forwards its packets.
type stageWhere int

const (
	whereUnknown stageWhere = iota // tc printed no in_hw/not_in_hw
	whereHW                        // in_hw; offloaded:yes (OVS's claim)
	wherePartial                   // offloaded:partial
	whereSW                        // not_in_hw, skip_hw; dp:ovs, dp:tc without offloaded:yes
)

// stage is one tc rule or datapath flow seen as a step of a pipeline.
type stage struct {
	label string // names the stage in reasons
	id    string // names it briefly in a verdict's basis: "chain 0 pref 2 handle 0x1"
	table string // "0" is a first stage: tc chain, dpctl recirc_id
	port  string // dpctl in_port; "" for tc (one device, one graph)
	// src and dst are the MACs the stage matches exactly; "" when it
	// matches any (wildcarded, partially masked, or no key). srcM and dstM
	// are the matches as printed, masks included (setMACs).
	src, dst   string
	srcM, dstM macMatch
	decap      bool   // matches tunnel metadata (enc_* keys, tunnel())
	notIP      bool   // matches a non-IP ethertype (dpctl, VLAN tags unwrapped)
	next       string // the table it continues in (goto chain, recirc), "" none
	nextName   string // next as the tool prints it: "chain 1", "recirc_id(0x442)"
	output     bool   // sends the packet out (mirred, an output port)
	where      stageWhere
	// hw and sw are the packets the stage counted in the observation:
	// growth between the first and the last sample (hw on hardware
	// counters, sw the rest), or with one sample its packets when it was
	// used inside the window. A stage of the software datapath counts in sw.
	hw, sw  uint64
	packets uint64 // all the packets it counted (dpctl), for reasons
	tcSW    bool   // dp:tc without offloaded:yes: a TC rule in software
	// note says why growth was not counted (a stage absent from the
	// first sample and too old to be new).
	note string
	// uncounted: its growth could not be read (dpctl: absent from the
	// first sample, no used: time) though it holds packets: it may have
	// carried traffic while sampled.
	uncounted bool
	// tunnel is the tunnel type the stage's own words name (tunnelShape:
	// TunnelVXLAN, TunnelGeneve, tunnelConflict, "" none) and tunnelWhy
	// those words.
	tunnel, tunnelWhy string
}

// path is one pipeline through the stages, first stage first.
type path struct {
	stages   []*stage
	src, dst string // the MACs all its stages together match exactly
	decap    bool
	notIP    bool
	// dangling: the last stage continues in a table where no stage
	// matching this pipeline is visible; loop: it came back to a table.
	dangling, loop bool
	// orphan: no first stage leads here (a later stage seen on its own).
	orphan bool
}

func (p path) last() *stage { return p.stages[len(p.stages)-1] }

// tunnel is the tunnel type the pipeline's stages name together ("" when
// none does, tunnelConflict when they disagree) and their words.
func (p path) tunnel() (typ, why string) {
	var words []string
	for _, s := range p.stages {
		if s.tunnel == "" {
			continue
		}
		switch {
		case typ == "":
			typ = s.tunnel
		case typ != s.tunnel:
			typ = tunnelConflict
		}
		words = append(words, s.tunnelWhy)
	}
	return typ, strings.Join(words, "; ")
}

// counted reports whether any stage of the pipeline counted packets.
func (p path) counted() bool {
	for _, s := range p.stages {
		if s.hw+s.sw > 0 {
			return true
		}
	}
	return false
}

// forwards reports whether the pipeline ends in a stage that outputs.
func (p path) forwards() bool { return !p.dangling && !p.loop && p.last().output }

func (p path) describe() string {
	parts := make([]string, len(p.stages))
	for i, s := range p.stages {
		parts[i] = s.counted()
	}
	d := strings.Join(parts, " -> ")
	switch {
	case p.loop:
		d += " -> (loops back to an earlier table)"
	case p.dangling:
		d += fmt.Sprintf(" -> (no stage of %s visible)", p.last().nextName)
	case !p.last().output:
		d += " (does not output)"
	}
	if p.orphan {
		d = "(no first stage leads here) " + d
	}
	return d
}

// maxPaths bounds the pipelines followed in one dump: a dump with more is
// judged inconclusive rather than half read.
const maxPaths = 4096

// buildPaths follows every pipeline from the first stages (table "0")
// through the stages their goto chain / recirc names (same in_port), keeping
// only stages whose exact MACs agree with the MACs matched so far, and
// dropping a pipeline as soon as one of its MACs is neither a guest's nor
// (as destination) a group address: it can be nothing to the pair, and a
// busy hypervisor's other guests must not crowd out the pair's pipelines.
// A stage no pipeline reached and that names two MACs itself starts a
// pipeline of its own, marked orphan. truncated is set when maxPaths was
// reached.
func buildPaths(stages []*stage, set macSet) (paths []path, truncated bool) {
	extend := func(p path, s *stage) (path, bool) {
		q, ok := extend(p, s)
		if ok && ((q.src != "" && !set.has(q.src)) || (q.dst != "" && !set.has(q.dst) && !isGroupMAC(q.dst))) {
			return q, false
		}
		return q, ok
	}
	byTable := map[string][]*stage{}
	for _, s := range stages {
		byTable[s.table] = append(byTable[s.table], s)
	}
	reached := map[*stage]bool{}
	var walk func(p path, visited map[string]bool)
	walk = func(p path, visited map[string]bool) {
		if len(paths) >= maxPaths {
			truncated = true
			return
		}
		last := p.last()
		if last.next == "" {
			paths = append(paths, p)
			return
		}
		if visited[last.next] || len(p.stages) >= 16 {
			p.loop = true
			paths = append(paths, p)
			return
		}
		var found bool
		for _, s := range byTable[last.next] {
			if s.port != "" && last.port != "" && s.port != last.port {
				continue
			}
			q, ok := extend(p, s)
			if !ok {
				continue
			}
			found = true
			reached[s] = true
			v := make(map[string]bool, len(visited)+1)
			for k := range visited {
				v[k] = true
			}
			v[last.next] = true
			walk(q, v)
		}
		if !found {
			p.dangling = true
			paths = append(paths, p)
		}
	}
	start := func(s *stage, orphan bool) {
		p, ok := extend(path{orphan: orphan}, s)
		if !ok {
			return
		}
		reached[s] = true
		walk(p, map[string]bool{s.table: true})
	}
	for _, s := range byTable["0"] {
		start(s, false)
	}
	for _, s := range stages {
		if !reached[s] && s.table != "0" && s.dst != "" && (s.src != "" || s.decap) {
			start(s, true)
		}
	}
	return paths, truncated
}

// extend appends s to p when its exact MACs agree with p's.
func extend(p path, s *stage) (path, bool) {
	if (s.src != "" && p.src != "" && s.src != p.src) || (s.dst != "" && p.dst != "" && s.dst != p.dst) {
		return p, false
	}
	q := p
	q.stages = append(append([]*stage(nil), p.stages...), s)
	if s.src != "" {
		q.src = s.src
	}
	if s.dst != "" {
		q.dst = s.dst
	}
	q.decap = p.decap || s.decap
	q.notIP = p.notIP || s.notIP
	return q, true
}

// pathRole is what a pipeline is to the guest pair; dirKey names its
// direction. The rules are those of a single rule (TCFilter.role), applied
// to the MACs of the whole pipeline.
func pathRole(p path, set macSet) (role tcRole, dirKey string) {
	if p.notIP {
		return tcUnrelated, ""
	}
	if p.dst == "" {
		// A decap pipeline matched by the inner source alone and, of the
		// destination, at most its multicast bit (OVN without port
		// security: eth(src=A,dst=00:00:00:00:00:00/01:00:00:00:00:00),
		// tc dst_mac 00:00:00:00:00:00/01:00:00:00:00:00; ovn-org/ovn#160)
		// belongs to the pair by that source when every stage's
		// destination match admits the other guest.
		if p.decap && p.src != "" && !isGroupMAC(p.src) && set.has(p.src) && p.dstAdmitsPeer(set) {
			return tcPairInner, p.src + " -> (decap, by inner source only)"
		}
		return tcUnrelated, ""
	}
	if p.src == "" {
		if p.decap && !isGroupMAC(p.dst) && set.has(p.dst) {
			return tcPairInner, "-> " + p.dst + " (decap, by inner destination only)"
		}
		return tcUnrelated, ""
	}
	if isGroupMAC(p.src) || !set.has(p.src) {
		return tcUnrelated, ""
	}
	switch {
	case isGroupMAC(p.dst):
		return tcException, ""
	case p.dst != p.src && set.has(p.dst):
		return tcPair, p.src + " -> " + p.dst
	}
	return tcUnrelated, ""
}

// dirState is the verdict on one direction of the guest pair.
type dirState int

const (
	dirOffloaded dirState = iota
	dirSoftware
	dirUnsure
	// dirIdle: the return direction of a one-way flow (OneWay) whose every
	// stage is in hardware or in software and counted nothing while
	// sampled: no traffic to carry, so neither judged nor unjudged. It
	// never makes a verdict offloaded by itself.
	dirIdle
)

// OneWay is a flow whose measured traffic goes one way only: iperf3 UDP
// from its client's guest (From, a MAC) to its server's (To). The server
// sends nothing back while the test runs (its TCP control connection
// between the same guests is idle), so the pair's pipelines of the return
// direction (To -> From) may stand with counters that did not grow on a
// fully offloaded node. A return direction that counted nothing is then
// named idle, as expected, instead of "did not grow"; one that counted a
// packet is judged as any direction. nil: the flow's traffic goes both
// ways (TCP), every direction is judged.
type OneWay struct{ From, To string }

// returnOf reports whether d is the return direction (To -> From) of the
// one-way flow w among the pair set; an end d does not name is the other
// guest's.
func (w *OneWay) returnOf(d *direction, set macSet) bool {
	if w == nil || len(set) != 2 {
		return false
	}
	from, errF := normalizeMAC(w.From)
	to, errT := normalizeMAC(w.To)
	if errF != nil || errT != nil || from == to || !set[from] || !set[to] {
		return false
	}
	src, dst := d.src, d.dst
	if src == "" && dst != "" {
		src = peers(set, dst)[0]
	}
	if dst == "" && src != "" {
		dst = peers(set, src)[0]
	}
	return src == to && dst == from
}

// idleReturn marks d idle when it is the one-way flow's return direction
// and none of its stages counted a packet (or could not be read), each in
// hardware or in software: a stage partially offloaded or without
// hardware information is still judged, as is any stage that counted.
func idleReturn(d *direction, o judgeOpts) {
	if !o.oneWay.returnOf(d, o.pair) {
		return
	}
	var stages []*stage
	seen := map[*stage]bool{}
	for _, p := range d.paths {
		for _, s := range p.stages {
			if s.hw+s.sw > 0 || s.uncounted || (s.where != whereHW && s.where != whereSW) {
				return
			}
			if !seen[s] {
				seen[s] = true
				stages = append(stages, s)
			}
		}
	}
	d.st = dirIdle
	d.why = fmt.Sprintf("carried nothing %s, as expected: the return direction of a one-way UDP flow (%s -> %s; iperf3's server sends nothing back while the test runs), not judged: %s",
		o.span, o.oneWay.From, o.oneWay.To, stageList(stages))
}

// direction is the judged pipelines of one direction.
type direction struct {
	key string
	// src and dst are the guests the direction goes from and to, "" for
	// the end its pipelines do not name (a decap pipeline matched by one
	// inner MAC alone).
	src, dst string
	inner    bool // decap pipelines matched by one inner MAC alone (the destination, or the source)
	st       dirState
	why      string
	paths    []path
}

// judgeOpts are the check's own rules.
type judgeOpts struct {
	// strictMix: a stage not in hardware next to stages in hardware is
	// inconclusive even when it counted nothing (tc seen once, where idle
	// only means "not used inside the window"); otherwise an idle software
	// stage is listed, not judged.
	strictMix bool
	// oneSample: hw and sw are the packets of recently used stages seen
	// once; software packets on a hardware stage then spoil it.
	oneSample bool
	span      string // "over 3 samples", "one sample, used inside 4s": for reasons
	// tunnel is the run's network type when known (network.type:
	// "vxlan", "geneve", "vlan", ...): a pipeline of the pair over another
	// tunnel (contradicts) is no proof for this run.
	tunnel string
	// oneWay is the flow's direction when its traffic goes one way only
	// (OneWay); pair is the guests' MACs it is read against.
	oneWay *OneWay
	pair   macSet
}

// judgeDirection decides one direction from its pipelines:
//
//   - a stage partially offloaded or without hardware information:
//     inconclusive;
//   - a stage not in hardware that counted packets: software, with the
//     in-hardware stages beside it named (the NIC misses there and the
//     kernel forwards every packet); inconclusive ("mixed") when another
//     pipeline of the direction carried packets entirely in hardware;
//   - no stage in hardware at all: software;
//   - an in-hardware stage whose software packets grew more than its
//     hardware ones (with one sample: any software packet): inconclusive;
//   - with strictMix, any stage not in hardware: inconclusive (without it,
//     an idle software stage is listed, not judged);
//   - offloaded when a pipeline from a first stage to a stage that outputs
//     has every stage in hardware with hardware packets grown;
//   - otherwise inconclusive: in-hardware first stages whose later stage is
//     not visible, later stages whose first stage is not visible, or
//     counters that did not grow.
func judgeDirection(d *direction, o judgeOpts) {
	var all []*stage
	seen := map[*stage]bool{}
	for _, p := range d.paths {
		for _, s := range p.stages {
			if !seen[s] {
				seen[s] = true
				all = append(all, s)
			}
		}
	}
	var partial, unknown, swBusy, swIdle, hw, hwSWHeavy []*stage
	for _, s := range all {
		switch s.where {
		case wherePartial:
			partial = append(partial, s)
		case whereUnknown:
			unknown = append(unknown, s)
		case whereSW:
			if s.hw+s.sw > 0 {
				swBusy = append(swBusy, s)
			} else {
				swIdle = append(swIdle, s)
			}
		case whereHW:
			hw = append(hw, s)
			if s.sw > s.hw || (o.oneSample && s.sw > 0) {
				hwSWHeavy = append(hwSWHeavy, s)
			}
		}
	}
	var carrying, halfway []path
	for _, p := range d.paths {
		allHW := true
		for _, s := range p.stages {
			allHW = allHW && s.where == whereHW && s.hw > 0
		}
		switch {
		case allHW && p.forwards() && !p.orphan:
			carrying = append(carrying, p)
		case allHW:
			halfway = append(halfway, p)
		}
	}
	set := func(st dirState, format string, args ...any) {
		d.st, d.why = st, fmt.Sprintf(format, args...)
	}
	switch {
	case len(partial) > 0:
		set(dirUnsure, "only partially offloaded (the software datapath still forwards): %s", stageList(partial))
	case len(unknown) > 0:
		set(dirUnsure, "%d stages without in_hw/not_in_hw information (tc or kernel too old?): %s", len(unknown), stageList(unknown))
	case len(swBusy) > 0 && len(carrying) > 0:
		set(dirUnsure, "mixed: a pipeline in hardware (%s) and stages in software that counted packets too (%s)", pathList(carrying), stageList(swBusy))
	case len(swBusy) > 0 && len(hw) > 0:
		set(dirSoftware, "stages in software counted packets (%s) next to stages in hardware (%s): the hardware misses there and the kernel forwards every packet of the pipeline %s", stageList(swBusy), stageList(hw), o.span)
	case len(swBusy) > 0:
		set(dirSoftware, "in software, counting packets %s: %s", o.span, stageList(swBusy))
	case len(hw) == 0:
		set(dirSoftware, "none in hardware: %s", stageList(swIdle))
	case len(hwSWHeavy) > 0 && o.oneSample:
		set(dirUnsure, "in hardware with software packets (one sample: a recent use may have been in software): %s", stageList(hwSWHeavy))
	case len(hwSWHeavy) > 0:
		set(dirUnsure, "in hardware, but software packets grew more than hardware packets: %s", stageList(hwSWHeavy))
	case o.strictMix && len(swIdle) > 0:
		set(dirUnsure, "mixed: %d stages in hardware, %d not in hardware: %s", len(hw), len(swIdle), stageList(swIdle))
	case len(carrying) > 0:
		note := ""
		if len(swIdle) > 0 {
			note = "; idle software stages, not judged: " + stageList(swIdle)
		}
		set(dirOffloaded, "every stage in hardware from the first to the one that outputs, hardware packets counted %s: %s%s", o.span, pathList(carrying), note)
	case len(halfway) > 0:
		set(dirUnsure, "stages in hardware counted packets, but no pipeline from a first stage to a stage that outputs is visible (a first stage without its later stage, or a later stage without its first, is not proof): %s", pathList(halfway))
	default:
		set(dirUnsure, "in hardware, but the hardware packet counters did not grow %s on any complete pipeline: %s", o.span, stageList(hw))
	}
}

// counted is the stage's label with what it counted.
func (s *stage) counted() string {
	x := fmt.Sprintf("%s (hardware packets +%d, software packets +%d", s.label, s.hw, s.sw)
	if s.note != "" {
		x += "; " + s.note
	}
	return x + ")"
}

// stageList names stages with what they counted.
func stageList(ss []*stage) string {
	d := make([]string, 0, len(ss))
	for _, s := range ss {
		d = append(d, s.counted())
	}
	sort.Strings(d)
	return capList(d)
}

func pathList(ps []path) string {
	d := make([]string, 0, len(ps))
	for _, p := range ps {
		d = append(d, p.describe())
	}
	sort.Strings(d)
	return capList(d)
}

func capList(d []string) string {
	if len(d) > 6 {
		d = append(d[:6], fmt.Sprintf("... %d more", len(d)-6))
	}
	return strings.Join(d, "; ")
}

// directions groups the pair's pipelines by direction and judges each;
// exceptions are the pipelines from a guest to a group address.
func directions(paths []path, set macSet, o judgeOpts) (dirs []*direction, exceptions []path) {
	byKey := map[string]*direction{}
	for _, p := range paths {
		role, key := pathRole(p, set)
		switch role {
		case tcException:
			exceptions = append(exceptions, p)
			continue
		case tcPair, tcPairInner:
		default:
			continue
		}
		d := byKey[key]
		if d == nil {
			d = &direction{key: key, inner: role == tcPairInner, src: p.src, dst: p.dst}
			byKey[key] = d
			dirs = append(dirs, d)
		}
		d.paths = append(d.paths, p)
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].key < dirs[j].key })
	kept := dirs[:0]
	for _, d := range dirs {
		if judgeTunnel(d, o) {
			kept = append(kept, d)
		}
	}
	return kept, exceptions
}

// judgeTunnel judges a direction with the run's network type in mind and
// reports whether the direction stays: a pipeline over a tunnel the
// network type contradicts that counted packets makes the direction
// inconclusive (the pair's traffic crossed a tunnel the run does not
// prove: a VXLAN pipeline in hardware says nothing of Geneve offload);
// one that counted nothing is left out and named; a direction left with
// no pipeline is dropped. Otherwise judgeDirection decides.
func judgeTunnel(d *direction, o judgeOpts) bool {
	var keep, idle, busy []path
	var busyWhy []string
	for _, p := range d.paths {
		typ, why := p.tunnel()
		switch {
		case !contradicts(o.tunnel, typ):
			keep = append(keep, p)
		case p.counted():
			busy = append(busy, p)
			busyWhy = append(busyWhy, fmt.Sprintf("%s (%s)", tunnelTypeName(typ), why))
		default:
			idle = append(idle, p)
		}
	}
	if len(busy) > 0 {
		d.st = dirUnsure
		sort.Strings(busyWhy)
		d.why = fmt.Sprintf("the pair's pipeline crossed %s, but the run's network type is %s: it proves nothing of this network's offload: %s",
			capList(busyWhy), o.tunnel, pathList(busy))
		return true
	}
	if len(keep) == 0 {
		return false
	}
	d.paths = keep
	judgeDirection(d, o)
	idleReturn(d, o)
	if len(idle) > 0 {
		d.why += fmt.Sprintf("; idle pipelines over another tunnel than the run's %s, not judged: %s", o.tunnel, pathList(idle))
	}
	return true
}

// basis is one line per direction: what the verdict on it looked at (the
// stages of each pipeline, first to last) and what it said.
func basisLines(prefix string, dirs []*direction, span string) []string {
	names := map[dirState]string{dirOffloaded: "offloaded", dirSoftware: "software", dirUnsure: "inconclusive", dirIdle: "idle (the one-way flow's return)"}
	var out []string
	for _, d := range dirs {
		var ps []string
		for _, p := range d.paths {
			ids := make([]string, len(p.stages))
			for i, s := range p.stages {
				ids[i] = s.id
			}
			x := strings.Join(ids, " -> ")
			if p.dangling {
				x += " -> (" + p.last().nextName + " not visible)"
			}
			ps = append(ps, x)
		}
		sort.Strings(ps)
		out = append(out, fmt.Sprintf("%sdirection %s: %s, %s: %s", prefix, d.key, names[d.st], span, capList(ps)))
	}
	return out
}

// combineDirections is the verdict of several directions: any inconclusive
// one, or offloaded next to software ("mixed": one direction in hardware,
// the other not), is inconclusive; all software is software; all offloaded
// is offloaded, innerOnly when none of them names both guests' MACs. An
// idle direction (the one-way flow's return, OneWay) is named and left
// out; when every direction is idle the state is dirIdle.
func combineDirections(dirs []*direction) (st dirState, innerOnly bool, why string) {
	var parts []string
	count := map[dirState]int{}
	innerOnly = true
	for _, d := range dirs {
		count[d.st]++
		if d.st == dirOffloaded && !d.inner {
			innerOnly = false
		}
		name := map[dirState]string{dirOffloaded: "offloaded", dirSoftware: "software", dirUnsure: "inconclusive", dirIdle: "idle"}[d.st]
		parts = append(parts, fmt.Sprintf("direction %s: %s: %s", d.key, name, d.why))
	}
	why = strings.Join(parts, "; ")
	switch {
	case count[dirIdle] == len(dirs):
		// Only the one-way flow's return direction, idle: nothing here
		// carried the measured traffic.
		return dirIdle, false, why
	case count[dirUnsure] > 0:
		return dirUnsure, false, why
	case count[dirOffloaded] > 0 && count[dirSoftware] > 0:
		return dirUnsure, false, "mixed: one direction in hardware, the other not: " + why
	case count[dirSoftware] > 0:
		return dirSoftware, false, why
	}
	return dirOffloaded, innerOnly, why
}

// pairStages are the stages of the directions' pipelines, each once.
func pairStages(dirs []*direction) []*stage {
	var out []*stage
	seen := map[*stage]bool{}
	for _, d := range dirs {
		for _, p := range d.paths {
			for _, s := range p.stages {
				if !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// macMatch is an Ethernet address match as tc and OVS print it: "A" (exact),
// "A/48", "A/N" (a prefix of N bits), "A/M" (M a mask in MAC form:
// "00:00:00:00:00:00/01:00:00:00:00:00" matches every unicast address), or
// nothing (any address).
type macMatch struct {
	val, mask [6]byte
	// bad: printed but not readable; it admits any address (it cannot
	// rule one out) and names none.
	bad bool
}

// parseMACMatch reads a match; "" is any address.
func parseMACMatch(s string) macMatch {
	var m macMatch
	s = strings.TrimSpace(s)
	if s == "" {
		return m
	}
	addr, mask, masked := strings.Cut(s, "/")
	a, err := net.ParseMAC(addr)
	if err != nil || len(a) != 6 {
		return macMatch{bad: true}
	}
	copy(m.val[:], a)
	switch bits, err := strconv.Atoi(mask); {
	case !masked:
		m.mask = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	case err == nil && bits >= 0 && bits <= 48:
		for i := 0; i < bits; i++ {
			m.mask[i/8] |= 0x80 >> (i % 8)
		}
	default:
		mk, err := net.ParseMAC(mask)
		if err != nil || len(mk) != 6 {
			return macMatch{bad: true}
		}
		copy(m.mask[:], mk)
	}
	return m
}

// admits reports whether the match lets the normalized address mac through.
func (m macMatch) admits(mac string) bool {
	if m.bad {
		return true
	}
	a, err := net.ParseMAC(mac)
	if err != nil || len(a) != 6 {
		return true
	}
	for i := range a {
		if a[i]&m.mask[i] != m.val[i]&m.mask[i] {
			return false
		}
	}
	return true
}

// admitsUnicast reports whether some unicast address gets through.
func (m macMatch) admitsUnicast() bool {
	return m.bad || m.mask[0]&1 == 0 || m.val[0]&1 == 0
}

// setMACs sets the stage's MACs from its src and dst matches as printed
// (tc flower's src_mac / dst_mac keys, OVS's eth(src=,dst=)).
func (s *stage) setMACs(src, dst string) {
	s.src, _ = fullMaskMAC(src)
	s.dst, _ = fullMaskMAC(dst)
	s.srcM, s.dstM = parseMACMatch(src), parseMACMatch(dst)
}

// dstAdmitsPeer reports whether every stage's destination match is
// readable and admits a guest other than the pipeline's source (with no
// guests given, some unicast address).
func (p path) dstAdmitsPeer(set macSet) bool {
	for _, st := range p.stages {
		if st.dstM.bad {
			return false
		}
	}
	for _, peer := range peers(set, p.src) {
		ok := true
		for _, st := range p.stages {
			ok = ok && st.dstM.admits(peer)
		}
		if ok {
			return true
		}
	}
	if len(set) == 0 {
		for _, st := range p.stages {
			if !st.dstM.admitsUnicast() {
				return false
			}
		}
		return true
	}
	return false
}

// peers are the guests of set other than mac, sorted.
func peers(set macSet, mac string) []string {
	var out []string
	for m := range set {
		if m != mac {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// A direction that was not judged cannot be offloaded (issue 33). Both
// directions of the pair's traffic cross every hypervisor that hosts one
// of the guests; a verdict of offloaded must have judged each of them, or
// seen that nothing went that way: no stage outside the pair's pipelines
// whose own MAC match admits that direction counted a packet. Such a stage
// that did count (a decap flow matching neither guest's MAC, an output in
// a shape the pipelines do not follow) may be carrying the direction in
// software or anywhere: the verdict is inconclusive and names them.

// pairView is what a check saw of the pair on one hypervisor: the judged
// directions of every device or dump, and the stages outside the pair's
// and the exception pipelines (free), IP only.
type pairView struct {
	dirs []*direction
	free []*stage
}

// add records one device's (or dump's) stages, its pair directions and
// its exception pipelines; ip says whether stage i carries IP (nil: all).
func (v *pairView) add(stages []*stage, dirs []*direction, exc []path, ip func(int) bool) {
	if v == nil {
		return
	}
	held := map[*stage]bool{}
	for _, s := range pairStages(dirs) {
		held[s] = true
	}
	for _, p := range exc {
		for _, s := range p.stages {
			held[s] = true
		}
	}
	for i, s := range stages {
		if !held[s] && !s.notIP && (ip == nil || ip(i)) {
			v.free = append(v.free, s)
		}
	}
	v.dirs = append(v.dirs, dirs...)
}

// wanted is a direction the verdict must account for; "" an end it does
// not name.
type wanted struct{ src, dst string }

func (w wanted) String() string {
	end := func(m string) string {
		if m == "" {
			return "(any)"
		}
		return m
	}
	return end(w.src) + " -> " + end(w.dst)
}

// wantedDirections are the directions of the pair: both ways between the
// two guests; with another number of guests given, the reverse of every
// judged direction.
func (v *pairView) wantedDirections(set macSet) []wanted {
	if len(set) == 2 {
		ms := peers(set, "")
		return []wanted{{ms[0], ms[1]}, {ms[1], ms[0]}}
	}
	var out []wanted
	seen := map[wanted]bool{}
	for _, d := range v.dirs {
		w := wanted{d.dst, d.src}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// covers reports whether judged direction d is a direction w wants.
func covers(d *direction, w wanted, set macSet) bool {
	src, dst := d.src, d.dst
	if len(set) == 2 {
		if src == "" && dst != "" {
			src = peers(set, dst)[0]
		}
		if dst == "" && src != "" {
			dst = peers(set, src)[0]
		}
	}
	return (w.src == "" || src == "" || src == w.src) && (w.dst == "" || dst == "" || dst == w.dst)
}

// unjudged checks every wanted direction against the judged ones: one
// that none covers is blocking when a free stage that admits it counted
// packets (its sentence names them), and quiet otherwise (its sentence
// says nothing went that way).
func (v *pairView) unjudged(set macSet) (blocking, quiet []string) {
	for _, w := range v.wantedDirections(set) {
		// An idle direction (the one-way flow's return) is no judgement:
		// a stage outside the pair's pipelines that may carry the same
		// direction and counted packets still blocks.
		judged, idle := false, false
		for _, d := range v.dirs {
			if d.st == dirIdle {
				idle = idle || covers(d, w, set)
				continue
			}
			judged = judged || covers(d, w, set)
		}
		if judged {
			continue
		}
		var carriers []*stage
		for _, s := range v.free {
			if s.hw+s.sw == 0 && !s.uncounted {
				continue
			}
			if (w.src == "" || s.srcM.admits(w.src)) && (w.dst == "" && s.dstM.admitsUnicast() || w.dst != "" && s.dstM.admits(w.dst)) {
				carriers = append(carriers, s)
			}
		}
		if len(carriers) > 0 {
			blocking = append(blocking, fmt.Sprintf("direction %s not judged: no pipeline of it in a shape the judge understands, while stages that may carry it counted packets (%d): %s",
				w, len(carriers), stageList(carriers)))
			continue
		}
		if idle {
			continue // its idle pipelines are named with their device or dump
		}
		quiet = append(quiet, fmt.Sprintf("direction %s: no pipeline of it, and nothing examined that could carry it counted a packet (none of its traffic crossed what was examined while sampled: a one-way UDP flow, or a device not examined)", w))
	}
	return blocking, quiet
}

// requireBoth is a check's verdict once both directions are accounted
// for: an offloaded verdict with a blocking direction (unjudged) becomes
// inconclusive, naming it first; quiet directions are named at the end.
// Other verdicts stand.
func (v *pairView) requireBoth(verdict results.Verdict, why string, set macSet) (results.Verdict, string) {
	if verdict != results.VerdictOffloaded {
		return verdict, why
	}
	blocking, quiet := v.unjudged(set)
	if len(blocking) > 0 {
		return results.VerdictInconclusive, strings.Join(blocking, "; ") + "; " + why
	}
	if len(quiet) > 0 {
		why += "; " + strings.Join(quiet, "; ")
	}
	return verdict, why
}
