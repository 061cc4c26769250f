package offload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
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

// ToolsProbeCommand prints, one a line, the HostTools found on the PATH of
// where it runs (`command -v`); it always exits 0.
var ToolsProbeCommand = "for t in " + strings.Join(HostTools, " ") + `; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done; true`

// ParseTools parses ToolsProbeCommand's output: the tools found, in
// HostTools order. A line that names no host tool is an error (the probe
// ran something else).
func ParseTools(data []byte) ([]string, error) {
	found := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if !slices.Contains(HostTools, line) {
			return nil, fmt.Errorf("tools probe: %q is not one of %s", line, strings.Join(HostTools, ", "))
		}
		found[line] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tools probe: %w", err)
	}
	var out []string
	for _, t := range HostTools {
		if found[t] {
			out = append(out, t)
		}
	}
	return out, nil
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
