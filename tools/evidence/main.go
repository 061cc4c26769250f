// Command evidence re-analyses saved evidence offline and prints JSON, so
// archived outputs can be re-checked with the harness's own parsers:
//
//	go run ./tools/evidence iperf3 RESULT.json
//	go run ./tools/evidence tc [--mac A,B] [--device DEV] [--with DEV2=DUMP,DUMP2 ...] [--span D] [--links FILE] DUMP [DUMP2 ...]
//	go run ./tools/evidence dpctl [--mac A,B] [--type offloaded] [--all FULL1,FULL2] DUMP [DUMP2 ...]
//	go run ./tools/evidence tcpdump [--mac A,B] [--first-packets N] [--window D] CAPTURE
//	go run ./tools/evidence conntrack [--flow PROTO,CLIENT,SERVER,PORT,OPENED ...] [--iperf3 CLIENT.json ...] TABLE
//
// tc: `tc -s [-j] filter show dev DEV ingress` outputs (JSON or text), oldest
// first; --device names DEV (the tunnel device's name says which tunnel
// its decap rules belong to), and each --with is another device of the
// same hypervisor with its own dumps (the harness saves
// tc-<dev>-sampleN.json/.txt per device): the representor and the tunnel
// device together hold both directions of the pair, and both are judged.
// --span is the time from the first to the last (the harness
// measures it; with it a rule's age tells a rule added since the first
// sample from one that cannot be the same device's), --links the
// hypervisor's `ip -j -d link show` (the ports of a LAG's shared block, so
// that a rule in fewer ports' hardware is found). Two files the harness
// saved for different devices or hypervisors (offload/FLOW/HV/tc-DEV-sampleN)
// are refused as a pair, as are two samples whose rules say they are not
// the same device's (e2e/offload pairTC). dpctl: `ovs-appctl dpctl/dump-flows [-m]` outputs, oldest first;
// --type offloaded says they came from `type=offloaded` (needed without -m,
// where flows carry no offloaded:/dp: fields); --all names the full `-m`
// dumps taken beside them (the harness saves dpctl-all-sampleN.txt next to
// dpctl-offloaded-sampleN.txt), so software flows between the guests count
// as they did in the run's own verdict. tcpdump: the printed output of
// `tcpdump -nn -e -tt`; when CAPTURE.stderr exists (the harness saves
// tcpdump's stderr there) its summary lines are read too: "received by
// filter" counts packets that crossed the representor unprinted, and a
// capture without any summary (no .stderr, a killed tcpdump) never reads
// offloaded. tc and dpctl print the verdict's basis (directions, the stages
// of each pipeline, samples) as the run's results file keeps it. --mac names
// the two guests' MACs; without it every flow is judged. conntrack: a hypervisor's
// /proc/net/nf_conntrack, `conntrack -L` or `ovs-appctl dpctl/dump-conntrack`
// (told apart by their lines); each --flow is one server port of the run and
// the connections opened to it, each --iperf3 an iperf3 client's -J output
// (the harness saves offload/<flow>/iperf3-pN-client.json) whose streams
// and their client ports it lists, and the run's connections are then
// judged (e2e/conntrack.Judge: hardware only when every data connection is
// [HW_OFFLOAD]; iperf3's control connection, idle while the test runs, is
// named and not judged, and only the client's output tells it from a TCP
// stream for sure).
//
// Exit status: 0 printed, 1 a file could not be read or parsed (the message
// names the file and what was wrong), 2 usage error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: evidence <iperf3|tc|dpctl|tcpdump|counters|conntrack> [flags] FILE [FILE...]
  iperf3  FILE                      an iperf3 -J client output
  tc      [--mac A,B] [--window D] [--device DEV] [--with DEV2=FILE,FILE ...] [--span D] [--links FILE] [--one-way FROM,TO] [--fragments] FILE...
                                    tc -s [-j] filter show dev DEV ingress, oldest first; --with adds
                                    another device of the same hypervisor (the tunnel device beside
                                    the representor): both directions of the pair judged across them;
                                    --span: the time from the first sample to the last; --links: ip -j
                                    -d link show of the same hypervisor (a LAG's shared block and its ports);
                                    --one-way: the MACs of a UDP flow's client and server guests (its
                                    return direction's rules that counted nothing are idle, as expected);
                                    --fragments: the fragment profile's judge (the pair's ip_flags
                                    frag rules labelled, the rest judged as usual)
  dpctl   [--mac A,B] [--window D] [--type offloaded] [--all FULL,...] [--one-way FROM,TO] [--fragments] FILE...
                                    ovs-appctl dpctl/dump-flows [-m] [type=offloaded], oldest first;
                                    --fragments: the pair's frag=first/later flows labelled, the rest
                                    judged as usual
  tcpdump [--mac A,B] [--first-packets N] [--window D] [--control GUEST_CAPTURE] FILE
                                    tcpdump -nn -e -tt output of the representor (FILE.stderr read
                                    too when present); --control is the same capture on the
                                    guest's data interface, without which a quiet capture proves nothing
                                    (so does one without tcpdump's summary, i.e. without FILE.stderr)
  counters [--max-rep-packets N] [--min-flow-packets N] [--cpuhit-before F --cpuhit-after F]
           REP_BEFORE REP_AFTER GUEST_BEFORE GUEST_AFTER
                                    ip -s -j link show of the representor and the guest's interface
  conntrack [--flow PROTO,CLIENT,SERVER,PORT,OPENED[,CONTROL] ...] [--iperf3 CLIENT.json ...] FILE
                                    /proc/net/nf_conntrack, conntrack -L or ovs-appctl dpctl/dump-conntrack
                                    of one hypervisor; with --flow (repeatable; iperf3 -P N opens N+1 TCP,
                                    UDP N plus 1 TCP; CONTROL of them are control connections, idle while
                                    the test runs: not judged) or --iperf3 (repeatable: an iperf3 client's
                                    -J output, whose streams' ports tell its control connection apart for
                                    sure) the run's connections judged: [HW_OFFLOAD] or not
Every verdict comes from the harness's own judge functions (e2e/offload). tc and dpctl need two
samples: one alone is inconclusive unless its own last use falls inside --window.
`

// usageError is a bad command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && cli.IsHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	for _, a := range args[min(1, len(args)):] {
		if a == "--" {
			break
		}
		if cli.IsHelp(a) && a != "help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	out, err := analyse(args)
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "evidence: %s\n%s", ue.msg, usage)
		return 2
	case err != nil:
		if out != nil { // partial result worth keeping (e.g. a short iperf3 run)
			writeJSON(stdout, out)
		}
		fmt.Fprintf(stderr, "evidence: %v\n", err)
		return 1
	}
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "evidence: write output: %v\n", err)
		return 1
	}
	return 0
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func analyse(args []string) (any, error) {
	if len(args) == 0 {
		return nil, usageError{"no kind given"}
	}
	kind := args[0]
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	macs := fs.String("mac", "", "comma-separated MACs of the two guests")
	dumpType := fs.String("type", "", "dpctl: \"offloaded\" when the dumps came from type=offloaded")
	allDumps := fs.String("all", "", "dpctl: comma-separated full `dpctl/dump-flows -m` dumps taken with the offloaded ones, oldest first")
	first := fs.Int("first-packets", config.DefaultCaptureFirstPackets, "tcpdump: packets of the flow allowed before offload takes over (the run's offload.capture_first_packets)")
	window := fs.Duration("window", 0, "tcpdump: capture duration (0: from the packets' timestamps); tc, dpctl: the span in which a single sample's own last use counts (0: one sample is never enough); tc: also the sampling span a rule absent from the first sample must fit by its installed age")
	control := fs.String("control", "", "tcpdump: the control capture of the same window on the guest's data interface (FILE.stderr read too)")
	maxRep := fs.Uint64("max-rep-packets", offload.DefaultMaxRepPackets, "counters: the representor's slow path may move fewer packets than this for offloaded (offload.representor_max_packets)")
	minFlow := fs.Uint64("min-flow-packets", offload.DefaultMinFlowPackets, "counters: the guest's interface must move at least this many (offload.counters_min_flow_packets)")
	cpuBefore := fs.String("cpuhit-before", "", "counters: ip -j stats ... cpu_hit of the representor, before")
	cpuAfter := fs.String("cpuhit-after", "", "counters: the same, after")
	span := fs.Duration("span", 0, "tc: the time from the first sample to the last (0: unknown; rules' ages are then not checked against it)")
	links := fs.String("links", "", "tc: ip -j -d link show of the hypervisor (the ports of a LAG's shared block)")
	oneWayFlag := fs.String("one-way", "", "tc, dpctl: FROM,TO: the MACs of a one-way (UDP) flow's client and server guests, two of --mac")
	fragments := fs.Bool("fragments", false, "tc, dpctl: judge as the fragment profile does (offload.JudgeTCFragments, JudgeDpctlFragments)")
	var flows flowFlags
	fs.Var(&flows, "flow", "conntrack: PROTO,CLIENT,SERVER,PORT,OPENED[,CONTROL] (repeatable)")
	var iperfOut listFlag
	fs.Var(&iperfOut, "iperf3", "conntrack: an iperf3 client's -J output (repeatable)")
	device := fs.String("device", "(file)", "tc: the device the dumps are of")
	var with listFlag
	fs.Var(&with, "with", "tc: DEV=FILE[,FILE...]: another device of the same hypervisor and its dumps, oldest first (repeatable)")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, usageError{fmt.Sprintf("%s: %v", kind, err)}
	}
	files := fs.Args()
	if len(files) == 0 {
		return nil, usageError{kind + ": no file given"}
	}
	var macList []string
	if *macs != "" {
		for _, m := range strings.Split(*macs, ",") {
			m = strings.TrimSpace(m)
			if hw, err := net.ParseMAC(m); err != nil || len(hw) != 6 {
				return nil, usageError{fmt.Sprintf("%s: --mac: %q is not a MAC address", kind, m)}
			}
			macList = append(macList, m)
		}
	}
	var oneWay *offload.OneWay
	if *oneWayFlag != "" {
		ends := strings.Split(*oneWayFlag, ",")
		if len(ends) != 2 || len(macList) != 2 || !slices.ContainsFunc(macList, func(m string) bool { return strings.EqualFold(m, strings.TrimSpace(ends[0])) }) ||
			!slices.ContainsFunc(macList, func(m string) bool { return strings.EqualFold(m, strings.TrimSpace(ends[1])) }) || strings.EqualFold(strings.TrimSpace(ends[0]), strings.TrimSpace(ends[1])) {
			return nil, usageError{fmt.Sprintf("%s: --one-way: want FROM,TO, the two MACs of --mac, got %q", kind, *oneWayFlag)}
		}
		oneWay = &offload.OneWay{From: strings.TrimSpace(ends[0]), To: strings.TrimSpace(ends[1])}
	}
	one := func() error {
		if len(files) != 1 {
			return usageError{fmt.Sprintf("%s takes one file, got %d", kind, len(files))}
		}
		return nil
	}
	switch kind {
	case "iperf3":
		if err := one(); err != nil {
			return nil, err
		}
		return analyseIperf3(files[0])
	case "tc":
		return analyseTC(*device, files, with, macList, *window, *span, *links, oneWay, *fragments)
	case "dpctl":
		if *dumpType != "" && *dumpType != "offloaded" && *dumpType != "all" {
			return nil, usageError{fmt.Sprintf("dpctl: --type: want offloaded or all, got %q", *dumpType)}
		}
		var all []string
		if *allDumps != "" {
			all = strings.Split(*allDumps, ",")
		}
		return analyseDpctl(files, all, macList, *dumpType == "offloaded", *window, oneWay, *fragments)
	case "tcpdump":
		if err := one(); err != nil {
			return nil, err
		}
		return analyseTcpdump(files[0], *control, macList, *first, *window)
	case "counters":
		if len(files) != 4 {
			return nil, usageError{fmt.Sprintf("counters takes REP_BEFORE REP_AFTER GUEST_BEFORE GUEST_AFTER, got %d file(s)", len(files))}
		}
		if (*cpuBefore == "") != (*cpuAfter == "") {
			return nil, usageError{"counters: --cpuhit-before and --cpuhit-after go together"}
		}
		return analyseCounters(files, *cpuBefore, *cpuAfter, offload.CountersInput{MaxRepPackets: *maxRep, MinFlowPackets: *minFlow})
	case "conntrack":
		if err := one(); err != nil {
			return nil, err
		}
		fl, err := iperfFlows(iperfOut)
		if err != nil {
			return nil, err
		}
		return analyseConntrack(files[0], append(flows, fl...))
	}
	return nil, usageError{fmt.Sprintf("unknown kind %q", kind)}
}

// flowFlags is the repeated --flow of conntrack.
type flowFlags []conntrack.Flow

func (f *flowFlags) String() string { return fmt.Sprint(len(*f)) }

func (f *flowFlags) Set(v string) error {
	p := strings.Split(v, ",")
	if len(p) != 5 && len(p) != 6 {
		return fmt.Errorf("want PROTO,CLIENT,SERVER,PORT,OPENED[,CONTROL], got %q", v)
	}
	c, err1 := netip.ParseAddr(p[1])
	s, err2 := netip.ParseAddr(p[2])
	port, err3 := strconv.ParseUint(p[3], 10, 16)
	n, err4 := strconv.Atoi(p[4])
	var ctl int
	var err5 error
	if len(p) == 6 {
		ctl, err5 = strconv.Atoi(p[5])
	}
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return fmt.Errorf("%q: %v", v, err)
	}
	*f = append(*f, conntrack.Flow{Proto: p[0], Client: c, Server: s, ServerPort: uint16(port), Opened: n, Control: ctl})
	return nil
}

// listFlag is a repeatable flag's values.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// iperfFlows are the connections each iperf3 client output's process
// opened, its streams by their client ports (iperf3.Connected,
// conntrack.IperfStreams), as the harness judges them.
func iperfFlows(files []string) ([]conntrack.Flow, error) {
	var out []conntrack.Flow
	for _, name := range files {
		data, err := readFile(name)
		if err != nil {
			return nil, err
		}
		st, err := iperf3.Connected(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r, _ := iperf3.Parse(data)
		if r.Protocol != iperf3.TCP && r.Protocol != iperf3.UDP {
			return nil, fmt.Errorf("%s: no test_start.protocol: cannot tell TCP from UDP", name)
		}
		out = append(out, conntrack.IperfStreams(r.Protocol == iperf3.UDP, st.Client, st.Server, st.ServerPort, st.Ports)...)
	}
	return out, nil
}

type conntrackOut struct {
	Kind        string               `json:"kind"`
	File        string               `json:"file"`
	Format      string               `json:"format"` // kernel (nf_conntrack / conntrack -L) or ovs (dpctl/dump-conntrack)
	Entries     int                  `json:"entries"`
	ByOwner     map[string]int       `json:"by_owner"`
	Judgement   *conntrack.Judgement `json:"judgement,omitempty"`
	Connections []connOut            `json:"connections,omitempty"`
}

type connOut struct {
	Proto      string `json:"proto"`
	Role       string `json:"role,omitempty"` // data, control; empty when the table cannot tell
	Client     string `json:"client"`
	Server     string `json:"server"`
	Owner      string `json:"owner"`
	Entries    int    `json:"entries"`
	FirstLine  int    `json:"first_line"`
	ServerPort uint16 `json:"server_port"`
}

func analyseConntrack(file string, flows []conntrack.Flow) (any, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	out := conntrackOut{Kind: "conntrack", File: file, Format: "kernel", ByOwner: map[string]int{}}
	parse := conntrack.Parse
	if first, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n"); strings.Contains(first, ",orig=(") {
		out.Format, parse = "ovs", conntrack.ParseDPCtl
	}
	es, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out.Entries = len(es)
	for _, e := range es {
		out.ByOwner[string(e.Offload)]++
	}
	if len(flows) == 0 {
		return out, nil
	}
	j, conns, err := conntrack.Judge(es, flows)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	out.Judgement = &j
	for _, c := range conns {
		out.Connections = append(out.Connections, connOut{Proto: c.Flow.Proto,
			Client: netip.AddrPortFrom(c.Flow.Client, c.ClientPort).String(), Server: c.Flow.Server.String(), ServerPort: c.Flow.ServerPort,
			Owner: string(c.Offload), Entries: len(c.Entries), FirstLine: c.Entries[0].Line, Role: c.Role})
	}
	return out, nil
}

func readFile(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

type iperf3Out struct {
	Kind         string   `json:"kind"`
	File         string   `json:"file"`
	Protocol     string   `json:"protocol"`
	Streams      int      `json:"streams"`
	Seconds      float64  `json:"seconds"`
	OfferedBps   float64  `json:"offered_bps"`
	DeliveredBps float64  `json:"delivered_bps"`
	LossPercent  *float64 `json:"loss_percent,omitempty"` // UDP
	LossBasis    string   `json:"loss_basis,omitempty"`
	Retransmits  *int64   `json:"retransmits,omitempty"` // TCP
	Version      string   `json:"iperf3_version"`
	Warnings     []string `json:"warnings,omitempty"`
	// Packets are the UDP datagram counts and rates (iperf3.Packets).
	Packets *results.PacketRates `json:"packets,omitempty"`
}

func analyseIperf3(name string) (any, error) {
	data, err := readFile(name)
	if err != nil {
		return nil, err
	}
	r, perr := iperf3.Parse(data)
	out := iperf3Out{
		Kind: "iperf3", File: name, Protocol: string(r.Protocol), Streams: r.Streams,
		Seconds: r.SenderSeconds, OfferedBps: r.OfferedBps, DeliveredBps: r.DeliveredBps,
		Version: r.Version, Warnings: r.Warnings,
	}
	switch r.Protocol {
	case iperf3.UDP:
		loss := r.LossPercent
		out.LossPercent, out.LossBasis = &loss, r.LossBasis
		if p, err := iperf3.Packets(r); err == nil {
			out.Packets = &p
		}
	case iperf3.TCP:
		retr := r.Retransmits
		out.Retransmits = &retr
	}
	if perr != nil {
		if r.Protocol == "" { // nothing readable: no partial output
			return nil, fmt.Errorf("%s: %w", name, perr)
		}
		return out, fmt.Errorf("%s: %w", name, perr)
	}
	return out, nil
}

type tcOut struct {
	Kind    string           `json:"kind"`
	Files   []string         `json:"files"`
	Samples []offload.TCDump `json:"samples"`
	Verdict results.Verdict  `json:"verdict"`
	Reason  string           `json:"reason"`
	// Basis: what the verdict looked at (direction, chains and rules of
	// each pipeline, samples), as the results file keeps it.
	Basis []string `json:"basis,omitempty"`
	// Notes say what the judgement lacked that the harness always has.
	Notes []string `json:"notes,omitempty"`
	// Fragments is the fragment judge's finding (--fragments).
	Fragments *offload.FragmentFinding `json:"fragments,omitempty"`
}

// oneSampleNote is said whenever a tc or dpctl judgement had a single sample.
func oneSampleNote(n int, window time.Duration) []string {
	if n != 1 {
		return nil
	}
	if window <= 0 {
		return []string{"one sample: growth cannot be seen, so it is never offloaded (the harness always takes two; give --window to let a rule's own last use count)"}
	}
	return []string{fmt.Sprintf("one sample: offloaded only if its own last use falls inside --window %s (the harness always takes two)", window)}
}

func analyseTC(device string, files, with, macs []string, window, span time.Duration, links string, oneWay *offload.OneWay, fragments bool) (any, error) {
	dumps, err := parseAll(files, offload.ParseTC)
	if err != nil {
		return nil, err
	}
	out := tcOut{Kind: "tc", Files: files, Samples: dumps, Notes: oneSampleNote(len(dumps), window)}
	var blocks map[uint32]offload.TCBlock
	if links != "" {
		data, err := readFile(links)
		if err != nil {
			return nil, err
		}
		if blocks, err = offload.ParseBlocks(data); err != nil {
			return nil, fmt.Errorf("%s: %w", links, err)
		}
	}
	if len(dumps) > 1 && span <= 0 {
		out.Notes = append(out.Notes, "no --span: rules' ages are not checked against the time between the samples (the harness measures it)")
	}
	obs := []offload.TCObservation{{Device: device, Samples: dumps, Window: window, Span: span, Blocks: blocks}}
	groups := [][]string{files}
	for _, w := range with {
		dev, list, ok := strings.Cut(w, "=")
		if !ok || dev == "" || list == "" {
			return nil, usageError{fmt.Sprintf("tc: --with: want DEV=FILE[,FILE...], got %q", w)}
		}
		more := strings.Split(list, ",")
		d, err := parseAll(more, offload.ParseTC)
		if err != nil {
			return nil, err
		}
		out.Files = append(out.Files, more...)
		groups = append(groups, more)
		obs = append(obs, offload.TCObservation{Device: dev, Samples: d, Window: window, Span: span, Blocks: blocks})
	}
	for _, g := range groups {
		if differ := harnessOrigins(g); differ != "" {
			out.Verdict, out.Reason = results.VerdictInconclusive, "the files are not samples of the same device, refused as a pair: "+differ
			return out, nil
		}
	}
	if fragments {
		f := offload.JudgeTCFragments(obs, macs, "", oneWay)
		out.Fragments, out.Verdict, out.Reason = &f, f.Verdict, f.Summary()
		return out, nil
	}
	out.Verdict, out.Reason, out.Basis = offload.JudgeTCFlow(obs, macs, "", oneWay)
	return out, nil
}

// harnessFile is the name the harness gives a tc sample: tc-DEV-sampleN,
// under offload/FLOW/HV/ in the run directory.
var harnessFile = regexp.MustCompile(`^tc-(.+)-sample[0-9]+\.(json|txt)$`)

// harnessOrigins names what differs between the files' devices, and
// hypervisors when the files sit in a run directory's offload/FLOW/HV/;
// "" when nothing does (or the names say nothing).
func harnessOrigins(files []string) string {
	var devs, hvs []string
	for _, f := range files {
		m := harnessFile.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			return ""
		}
		devs = append(devs, m[1])
		hv := filepath.Dir(f)
		if filepath.Base(filepath.Dir(filepath.Dir(hv))) == "offload" {
			hvs = append(hvs, filepath.Base(hv))
		}
	}
	var differ []string
	for _, d := range []struct {
		what  string
		names []string
	}{{"device", devs}, {"hypervisor", hvs}} {
		if len(d.names) == len(files) && len(slices.Compact(slices.Clone(d.names))) > 1 {
			differ = append(differ, fmt.Sprintf("%s %s", d.what, strings.Join(d.names, ", ")))
		}
	}
	return strings.Join(differ, "; ")
}

// parseAll reads and parses every file in order; an error names the file.
func parseAll[T any](files []string, parse func([]byte) (T, error)) ([]T, error) {
	out := make([]T, 0, len(files))
	for _, name := range files {
		data, err := readFile(name)
		if err != nil {
			return nil, err
		}
		v, err := parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

type dpctlOut struct {
	Kind     string                `json:"kind"`
	Files    []string              `json:"files"`
	Samples  [][]offload.DpctlFlow `json:"samples"`
	Flows    []int                 `json:"flows_per_sample"`
	AllFiles []string              `json:"all_files,omitempty"`
	All      [][]offload.DpctlFlow `json:"all_samples,omitempty"`
	Verdict  results.Verdict       `json:"verdict"`
	Reason   string                `json:"reason"`
	Basis    []string              `json:"basis,omitempty"` // as tcOut's
	Notes    []string              `json:"notes,omitempty"`
	// Fragments is the fragment judge's finding (--fragments).
	Fragments *offload.FragmentFinding `json:"fragments,omitempty"`
}

func analyseDpctl(files, allFiles, macs []string, typed bool, window time.Duration, oneWay *offload.OneWay, fragments bool) (any, error) {
	offloaded, err := parseAll(files, offload.ParseDpctl)
	if err != nil {
		return nil, err
	}
	all, err := parseAll(allFiles, offload.ParseDpctl)
	if err != nil {
		return nil, err
	}
	out := dpctlOut{Kind: "dpctl", Files: files, Samples: offloaded, AllFiles: allFiles, Notes: oneSampleNote(len(offloaded), window)}
	if len(all) > 0 {
		out.All = all
	}
	for _, flows := range offloaded {
		out.Flows = append(out.Flows, len(flows))
	}
	s := offload.DpctlSamples{Offloaded: offloaded, All: all, OffloadedIsTyped: typed, Window: window, OneWay: oneWay}
	if fragments {
		f := offload.JudgeDpctlFragments(s, macs)
		out.Fragments, out.Verdict, out.Reason = &f, f.Verdict, f.Summary()
		return out, nil
	}
	out.Verdict, out.Reason, out.Basis = offload.JudgeDpctlBasis(s, macs)
	return out, nil
}

type tcpdumpOut struct {
	Kind           string                   `json:"kind"`
	File           string                   `json:"file"`
	StderrFile     string                   `json:"stderr_file,omitempty"`
	Interface      string                   `json:"interface,omitempty"`
	PacketLines    int                      `json:"packet_lines"`
	Captured       int                      `json:"captured"`
	ReceivedFilter int                      `json:"received_by_filter"`
	DroppedKernel  int                      `json:"dropped_by_kernel"`
	FirstTime      float64                  `json:"first_time,omitempty"`
	LastTime       float64                  `json:"last_time,omitempty"`
	Errors         []string                 `json:"errors,omitempty"`
	SkippedLines   int                      `json:"skipped_lines"`
	FirstPackets   int                      `json:"first_packets_allowed"`
	ControlFile    string                   `json:"control_file,omitempty"`
	Judgement      offload.CaptureJudgement `json:"judgement"`
	Verdict        results.Verdict          `json:"verdict"`
	Reason         string                   `json:"reason"`
	Notes          []string                 `json:"notes,omitempty"`
}

// readCapture reads a tcpdump output and the FILE.stderr beside it (the
// harness saves tcpdump's summary there).
func readCapture(name string) (offload.Capture, bool, error) {
	data, err := readFile(name)
	if err != nil {
		return offload.Capture{}, false, err
	}
	hadStderr := false
	if extra, err := os.ReadFile(name + ".stderr"); err == nil {
		data = append(append(data, '\n'), extra...)
		hadStderr = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return offload.Capture{}, false, fmt.Errorf("%s.stderr: %w", name, err)
	}
	c, err := offload.ParseTcpdump(data)
	if err != nil {
		return c, hadStderr, fmt.Errorf("%s: %w", name, err)
	}
	return c, hadStderr, nil
}

func analyseTcpdump(name, control string, macs []string, first int, window time.Duration) (any, error) {
	if first < 0 {
		return nil, usageError{fmt.Sprintf("tcpdump: --first-packets must be >= 0, got %d", first)}
	}
	out := tcpdumpOut{Kind: "tcpdump", File: name, FirstPackets: first}
	c, hadStderr, err := readCapture(name)
	if err != nil {
		return nil, err
	}
	if hadStderr {
		out.StderrFile = name + ".stderr"
	}
	ctl := offload.ControlCapture{Guest: "(control file)", Iface: control}
	if control != "" {
		cc, _, err := readCapture(control)
		if err != nil {
			return nil, fmt.Errorf("--control: %w", err)
		}
		ctl.Capture = &cc
		out.ControlFile = control
	} else {
		out.Notes = append(out.Notes, "no control capture (--control): a representor capture without the flow's packets is inconclusive, as in the harness")
	}
	out.Interface, out.PacketLines = c.Interface, len(c.Packets)
	out.Captured, out.ReceivedFilter, out.DroppedKernel = c.Captured, c.ReceivedFilter, c.DroppedKernel
	out.Errors, out.SkippedLines = c.Errors, c.Skipped
	if len(c.Packets) > 0 {
		out.FirstTime, out.LastTime = c.Packets[0].Time, c.Packets[len(c.Packets)-1].Time
	}
	out.Verdict, out.Reason, out.Judgement = offload.JudgeCaptureWithControl(c, ctl, macs, first, window)
	return out, nil
}

type countersOut struct {
	Kind    string                 `json:"kind"`
	Files   []string               `json:"files"`
	Rep     [2]offload.RepCounters `json:"representor"`
	Guest   [2]offload.LinkStats   `json:"guest"`
	Verdict results.Verdict        `json:"verdict"`
	Reason  string                 `json:"reason"`
	Notes   []string               `json:"notes,omitempty"`
}

func analyseCounters(files []string, cpuBefore, cpuAfter string, in offload.CountersInput) (any, error) {
	stats, err := parseAll(files, offload.ParseLinkStats)
	if err != nil {
		return nil, err
	}
	out := countersOut{Kind: "counters", Files: files}
	out.Rep[0].Link, out.Rep[1].Link, out.Guest[0], out.Guest[1] = stats[0], stats[1], stats[2], stats[3]
	if cpuBefore != "" {
		for i, f := range []string{cpuBefore, cpuAfter} {
			data, err := readFile(f)
			if err != nil {
				return nil, err
			}
			st, err := offload.ParseLinkStats(data)
			switch {
			case errors.Is(err, offload.ErrNoCounters):
				// listed without counters: the driver keeps none (veth)
			case err != nil:
				return nil, fmt.Errorf("%s: %w", f, err)
			default:
				out.Rep[i].CPUHit = &st
			}
		}
		out.Files = append(out.Files, cpuBefore, cpuAfter)
	} else {
		out.Notes = append(out.Notes, "no cpu_hit readings (--cpuhit-before/--cpuhit-after): the representor's link counters are taken as its slow path, which is right for a device without a hardware datapath (veth) and wrong for an mlx5 representor")
	}
	out.Verdict, out.Reason = offload.JudgeCounters(out.Rep[0], out.Rep[1], out.Guest[0], out.Guest[1], in)
	return out, nil
}
