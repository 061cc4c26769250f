// Command evidence re-analyses saved evidence offline and prints JSON, so
// archived outputs can be re-checked with the harness's own parsers:
//
//	go run ./tools/evidence iperf3 RESULT.json
//	go run ./tools/evidence tc [--mac A,B] DUMP [DUMP2 ...]
//	go run ./tools/evidence dpctl [--mac A,B] [--type offloaded] [--all FULL1,FULL2] DUMP [DUMP2 ...]
//	go run ./tools/evidence tcpdump [--mac A,B] [--first-packets N] [--window D] CAPTURE
//
// tc: `tc -s [-j] filter show dev DEV ingress` outputs (JSON or text), oldest
// first. dpctl: `ovs-appctl dpctl/dump-flows [-m]` outputs, oldest first;
// --type offloaded says they came from `type=offloaded` (needed without -m,
// where flows carry no offloaded:/dp: fields); --all names the full `-m`
// dumps taken beside them (the harness saves dpctl-all-sampleN.txt next to
// dpctl-offloaded-sampleN.txt), so software flows between the guests count
// as they did in the run's own verdict. tcpdump: the printed output of
// `tcpdump -nn -e -tt`; when CAPTURE.stderr exists (the harness saves
// tcpdump's stderr there) its summary lines are read too. --mac names the two
// guests' MACs; without it every flow is judged.
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
	"os"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: evidence <iperf3|tc|dpctl|tcpdump> [flags] FILE [FILE...]
  iperf3  FILE                      an iperf3 -J client output
  tc      [--mac A,B] FILE...       tc -s [-j] filter show dev DEV ingress, oldest first
  dpctl   [--mac A,B] [--type offloaded] [--all FULL,...] FILE...
                                    ovs-appctl dpctl/dump-flows [-m] [type=offloaded], oldest first
  tcpdump [--mac A,B] [--first-packets N] [--window DURATION] FILE
                                    tcpdump -nn -e -tt output (FILE.stderr read too when present)
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
	window := fs.Duration("window", 0, "tcpdump: capture duration (0: from the packets' timestamps)")
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
		return analyseTC(files, macList)
	case "dpctl":
		if *dumpType != "" && *dumpType != "offloaded" && *dumpType != "all" {
			return nil, usageError{fmt.Sprintf("dpctl: --type: want offloaded or all, got %q", *dumpType)}
		}
		var all []string
		if *allDumps != "" {
			all = strings.Split(*allDumps, ",")
		}
		return analyseDpctl(files, all, macList, *dumpType == "offloaded")
	case "tcpdump":
		if err := one(); err != nil {
			return nil, err
		}
		return analyseTcpdump(files[0], macList, *first, *window)
	}
	return nil, usageError{fmt.Sprintf("unknown kind %q", kind)}
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
	Verdict offload.Verdict  `json:"verdict"`
	Reason  string           `json:"reason"`
}

func analyseTC(files, macs []string) (any, error) {
	dumps, err := parseAll(files, offload.ParseTC)
	if err != nil {
		return nil, err
	}
	out := tcOut{Kind: "tc", Files: files, Samples: dumps}
	obs := offload.TCObservation{Device: "(file)", Samples: dumps}
	out.Verdict, out.Reason = offload.JudgeTC([]offload.TCObservation{obs}, macs)
	return out, nil
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
	Verdict  offload.Verdict       `json:"verdict"`
	Reason   string                `json:"reason"`
}

func analyseDpctl(files, allFiles, macs []string, typed bool) (any, error) {
	offloaded, err := parseAll(files, offload.ParseDpctl)
	if err != nil {
		return nil, err
	}
	all, err := parseAll(allFiles, offload.ParseDpctl)
	if err != nil {
		return nil, err
	}
	out := dpctlOut{Kind: "dpctl", Files: files, Samples: offloaded, AllFiles: allFiles}
	if len(all) > 0 {
		out.All = all
	}
	for _, flows := range offloaded {
		out.Flows = append(out.Flows, len(flows))
	}
	s := offload.DpctlSamples{Offloaded: offloaded, All: all, OffloadedIsTyped: typed}
	out.Verdict, out.Reason = offload.JudgeDpctl(s, macs)
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
	Judgement      offload.CaptureJudgement `json:"judgement"`
	Verdict        offload.Verdict          `json:"verdict"`
	Reason         string                   `json:"reason"`
}

func analyseTcpdump(name string, macs []string, first int, window time.Duration) (any, error) {
	if first < 0 {
		return nil, usageError{fmt.Sprintf("tcpdump: --first-packets must be >= 0, got %d", first)}
	}
	data, err := readFile(name)
	if err != nil {
		return nil, err
	}
	out := tcpdumpOut{Kind: "tcpdump", File: name, FirstPackets: first}
	if extra, err := os.ReadFile(name + ".stderr"); err == nil {
		data = append(append(data, '\n'), extra...)
		out.StderrFile = name + ".stderr"
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s.stderr: %w", name, err)
	}
	c, err := offload.ParseTcpdump(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out.Interface, out.PacketLines = c.Interface, len(c.Packets)
	out.Captured, out.ReceivedFilter, out.DroppedKernel = c.Captured, c.ReceivedFilter, c.DroppedKernel
	out.Errors, out.SkippedLines = c.Errors, c.Skipped
	if len(c.Packets) > 0 {
		out.FirstTime, out.LastTime = c.Packets[0].Time, c.Packets[len(c.Packets)-1].Time
	}
	out.Verdict, out.Reason, out.Judgement = offload.JudgeCapture(c, macs, first, window)
	return out, nil
}
