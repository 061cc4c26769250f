package offload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// HostTools are the host programs the harness runs on a hypervisor besides
// Open vSwitch's: the tc check and `tc -V` (tc), the representor capture
// (tcpdump), the NIC facts (ethtool), the counters check and the tunnel
// device lookup (ip). With hypervisors.access: kubernetes they run in the
// OVS container when it has them, else in a node debug pod
// (WithHostTools); every other command runs where the OVS commands run.
var HostTools = []string{"tc", "tcpdump", "ethtool", "ip"}

// OptionalTools are the HostTools a run goes on without: ethtool only
// feeds the NIC facts of the environment record (`ethtool -i`), which are
// then recorded as NoEthtool. No check's verdict rests on it.
var OptionalTools = []string{"ethtool"}

// NoEthtool is the NIC driver recorded where ethtool is not there to ask.
const NoEthtool = "unknown (no ethtool)"

// ToolOf is the program a hypervisor command line built by the harness
// runs: its first word, after the wrappers the harness itself puts in
// front — `timeout [-s SIG] [-k DURATION] DURATION` (the representor
// capture) and `sudo [-n]`. It does not parse shell: the harness's
// command lines start with their program.
func ToolOf(cmd string) string {
	f := strings.Fields(cmd)
	for len(f) > 0 {
		switch f[0] {
		case "timeout":
			f = f[1:]
			for len(f) > 0 && strings.HasPrefix(f[0], "-") {
				opt := f[0]
				f = f[1:]
				if (opt == "-s" || opt == "-k") && len(f) > 0 {
					f = f[1:] // the option's value
				}
			}
			if len(f) > 0 {
				f = f[1:] // the duration
			}
		case "sudo":
			f = f[1:]
			for len(f) > 0 && strings.HasPrefix(f[0], "-") {
				f = f[1:]
			}
		default:
			return f[0]
		}
	}
	return ""
}

// IsHostToolCommand reports whether cmd runs one of HostTools (ToolOf).
func IsHostToolCommand(cmd string) bool { return slices.Contains(HostTools, ToolOf(cmd)) }

// ToolsProbeCommand probes, where it runs, what the harness's host-tool
// commands need, not only that the programs are there: each probe runs
// one small command of the kind the checks run and prints one record
// line, "asap2e2e-probe NAME EXIT FIRST-LINE-OF-OUTPUT" (ParseTools):
//
//   - tc: `tc -V`;
//   - tcpdump: `tcpdump --version`;
//   - timeout: `timeout -s INT 5 true`, the form the representor capture
//     runs tcpdump under (BusyBox's timeout before 1.30 wants -t);
//   - ethtool: `ethtool --version`;
//   - ip: `ip -V`, and ip-stats: `ip -j stats show dev lo group link`, the
//     JSON `ip stats` the counters check reads the cpu_hit counters with
//     (iproute2 5.18 and later);
//   - setsid: `setsid true`, which the command wrapper uses where a command
//     does not start as a process group leader.
//
// It always exits 0.
var ToolsProbeCommand = `p() { n=$1; shift; o=$("$@" 2>&1 </dev/null); r=$?; o=${o%%"
"*}; echo "asap2e2e-probe $n $r $o"; }; ` +
	`p tc tc -V; p tcpdump tcpdump --version; p timeout timeout -s INT 5 true; p ethtool ethtool --version; ` +
	`p ip ip -V; p ip-stats ip -j stats show dev lo group link; p setsid setsid true; true`

// probeNames are the records ToolsProbeCommand prints, in its order.
var probeNames = []string{"tc", "tcpdump", "timeout", "ethtool", "ip", "ip-stats", "setsid"}

// Probe is one record of ToolsProbeCommand: the probe's exit status and
// the first line of its output (stdout and stderr).
type Probe struct {
	Exit int
	Line string
}

// ToolsProbe is what ToolsProbeCommand found where it ran.
type ToolsProbe struct {
	// Found are the HostTools whose every use works there, in HostTools
	// order.
	Found []string
	// Lacking says, for each other HostTool, what is missing: "tcpdump:
	// timeout -s INT fails: …", "ip: iproute2 6.1.0 … has no `ip stats`".
	Lacking map[string]string
	// Setsid is the probe of setsid (the wrapper needs it only where a
	// command does not start as a process group leader).
	Setsid Probe
}

// Missing are the HostTools not Found, in HostTools order.
func (p ToolsProbe) Missing() []string { return MissingTools(p.Found) }

// MissingRequired are the Missing tools a run cannot go on without (not
// OptionalTools), in HostTools order.
func (p ToolsProbe) MissingRequired() []string {
	var out []string
	for _, t := range p.Missing() {
		if !slices.Contains(OptionalTools, t) {
			out = append(out, t)
		}
	}
	return out
}

// Why lists what is missing for each of tools, "tool (reason)", joined.
func (p ToolsProbe) Why(tools []string) string {
	var out []string
	for _, t := range tools {
		if r, ok := p.Lacking[t]; ok {
			out = append(out, t+" ("+r+")")
		} else {
			out = append(out, t)
		}
	}
	return strings.Join(out, ", ")
}

// ParseTools parses ToolsProbeCommand's output and judges each host tool by
// what its uses need: tcpdump also needs timeout (the capture runs under
// it), ip needs JSON `ip stats` (an ip that lacks it is named so, with its
// version). A line that is no probe record, a record of an unknown probe,
// one with a bad exit status or twice, and a probe that printed no record
// are errors, all of them at once.
func ParseTools(data []byte) (ToolsProbe, error) {
	var out ToolsProbe
	got := map[string]Probe{}
	var probs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, "asap2e2e-probe ")
		f := strings.SplitN(rest, " ", 3)
		if !ok || len(f) < 2 {
			probs = append(probs, fmt.Sprintf("line %d: %q is not a probe record (asap2e2e-probe NAME EXIT OUTPUT)", n, line))
			continue
		}
		name := f[0]
		code, err := strconv.Atoi(f[1])
		switch {
		case !slices.Contains(probeNames, name):
			probs = append(probs, fmt.Sprintf("line %d: unknown probe %q (want one of %s)", n, name, strings.Join(probeNames, ", ")))
			continue
		case err != nil || code < 0 || code > 255 || strconv.Itoa(code) != f[1]:
			probs = append(probs, fmt.Sprintf("line %d: probe %s: exit status %q is not 0-255", n, name, f[1]))
			continue
		case dup(got, name):
			probs = append(probs, fmt.Sprintf("line %d: probe %s reported twice", n, name))
			continue
		}
		p := Probe{Exit: code}
		if len(f) == 3 {
			p.Line = strings.TrimSpace(f[2])
		}
		got[name] = p
	}
	if err := sc.Err(); err != nil {
		probs = append(probs, err.Error())
	}
	for _, name := range probeNames {
		if _, ok := got[name]; !ok {
			probs = append(probs, "no record of probe "+name)
		}
	}
	if len(probs) > 0 {
		return out, fmt.Errorf("tools probe: %s", strings.Join(probs, "; "))
	}
	out.Setsid = got["setsid"]
	out.Lacking = map[string]string{}
	for _, t := range HostTools {
		if why := lacking(t, got); why != "" {
			out.Lacking[t] = why
		} else {
			out.Found = append(out.Found, t)
		}
	}
	return out, nil
}

func dup(m map[string]Probe, name string) bool {
	_, ok := m[name]
	return ok
}

// lacking says what tool t lacks by the probes, "" when nothing.
func lacking(t string, got map[string]Probe) string {
	switch t {
	case "tcpdump":
		if why := failed("tcpdump --version", got["tcpdump"]); why != "" {
			return why
		}
		if why := failed("timeout -s INT 5 true", got["timeout"]); why != "" {
			return why + "; the representor capture runs tcpdump under timeout -s INT"
		}
		return ""
	case "ip":
		if why := failed("ip -V", got["ip"]); why != "" {
			return why
		}
		st := got["ip-stats"]
		if st.Exit == 0 {
			return ""
		}
		version := got["ip"].Line
		switch {
		case strings.Contains(st.Line, `Object "stats" is unknown`):
			return fmt.Sprintf("%s has no `ip stats` (iproute2 5.18 or later), which the counters check reads the cpu_hit counters with: %s", version, st.Line)
		case strings.Contains(st.Line, `Option "-j" is unknown`):
			return fmt.Sprintf("%s has no JSON output (-j), which the counters check reads: %s", version, st.Line)
		}
		return fmt.Sprintf("%s: `ip -j stats show dev lo group link` exited %d: %s", version, st.Exit, st.Line)
	case "tc":
		return failed("tc -V", got["tc"])
	case "ethtool":
		return failed("ethtool --version", got["ethtool"])
	}
	return "not probed"
}

// failed says why probe p of cmd failed, "" when it passed.
func failed(cmd string, p Probe) string {
	prog := strings.Fields(cmd)[0]
	switch {
	case p.Exit == 0:
		return ""
	case p.Exit == 127:
		return prog + " is not installed (exit 127: " + p.Line + ")"
	case p.Exit == 126:
		return prog + " cannot be run (exit 126: " + p.Line + ")"
	}
	return fmt.Sprintf("`%s` exited %d: %s", cmd, p.Exit, p.Line)
}

// ProbeTools runs ToolsProbeCommand on r: the host tools whose uses work
// there, and what the others lack.
func ProbeTools(ctx context.Context, r remote.Runner) (ToolsProbe, error) {
	res, err := r.Run(ctx, ToolsProbeCommand)
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		return ToolsProbe{}, fmt.Errorf("probing the host tools on %s: %w", r.Name(), err)
	}
	probe, err := ParseTools(res.Stdout)
	if err != nil {
		return ToolsProbe{}, fmt.Errorf("probing the host tools on %s: %w", r.Name(), err)
	}
	return probe, nil
}

// MissingTools are the HostTools not in found.
func MissingTools(found []string) []string {
	var out []string
	for _, t := range HostTools {
		if !slices.Contains(found, t) {
			out = append(out, t)
		}
	}
	return out
}

// WithHostTools returns a Runner that runs each command whose ToolOf is in
// onHost on host and every other command (the OVS commands, `uname -r`,
// the tools found where OVS runs) on ovs. Its Name is ovs's; the command
// log names the runner each command really ran on. With no onHost, or a
// nil host, it returns ovs itself.
func WithHostTools(ovs, host remote.Runner, onHost []string) remote.Runner {
	if host == nil || len(onHost) == 0 {
		return ovs
	}
	return hostRouted{Runner: ovs, host: host, onHost: slices.Clone(onHost)}
}

type hostRouted struct {
	remote.Runner // the OVS container
	host          remote.Runner
	onHost        []string
}

func (h hostRouted) pick(cmd string) remote.Runner {
	if slices.Contains(h.onHost, ToolOf(cmd)) {
		return h.host
	}
	return h.Runner
}

func (h hostRouted) Run(ctx context.Context, cmd string) (remote.Result, error) {
	return h.pick(cmd).Run(ctx, cmd)
}

func (h hostRouted) Start(ctx context.Context, cmd string) (remote.Process, error) {
	return h.pick(cmd).Start(ctx, cmd)
}
