package offload

import (
	"context"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// OVSTools are the Open vSwitch command-line tools the harness runs on a
// hypervisor; only their command lines get hypervisors.ovs_command_prefix.
var OVSTools = []string{"ovs-vsctl", "ovs-appctl", "ovs-dpctl", "ovs-ofctl"}

// IsOVSCommand reports whether cmd (a shell command line) starts with one of
// OVSTools. tc, ip, tcpdump, ethtool, uname... are not OVS commands: they
// run on the host as they are.
func IsOVSCommand(cmd string) bool {
	first, _, _ := strings.Cut(strings.TrimLeft(cmd, " \t"), " ")
	for _, t := range OVSTools {
		if first == t {
			return true
		}
	}
	return false
}

// OVSCommand is the one place that decides how an OVS command reaches the
// hypervisor's Open vSwitch. With an empty prefix cmd is returned as it is.
// Otherwise the result is
//
//	<prefix> sh -c '<cmd>'
//
// prefix is shell text written by the operator and evaluated by the
// hypervisor's login shell, so it may use $(...) (e.g. `crictl exec -i
// $(crictl ps -q --name openvswitch-vswitchd)`); it must end where a
// command and its arguments follow (`kubectl ... exec ... --`, `docker exec
// NAME`, `ip netns exec NS`, `env VAR=...`). cmd, already a shell command
// line, is quoted exactly once with remote.ShellQuote and run by `sh -c`
// inside the prefix's context: its own quoting, blanks and `$` reach that
// shell unchanged, and any redirection in it happens there too. A command
// that is not an OVS command (IsOVSCommand) is returned unchanged.
func OVSCommand(prefix, cmd string) string {
	prefix = strings.TrimSpace(prefix)
	if prefix == "" || !IsOVSCommand(cmd) {
		return cmd
	}
	return prefix + " sh -c " + remote.ShellQuote(cmd)
}

// WithOVSPrefix returns a Runner that runs every OVS command through
// OVSCommand(prefix, cmd) and every other command unchanged; with an empty
// prefix it returns r itself. The checks and the environment collection
// build plain `ovs-vsctl ...` lines and reach the hypervisor's OVS through
// it, so the prefix is applied in one place only.
func WithOVSPrefix(r remote.Runner, prefix string) remote.Runner {
	if strings.TrimSpace(prefix) == "" {
		return r
	}
	return ovsPrefixed{Runner: r, prefix: prefix}
}

type ovsPrefixed struct {
	remote.Runner
	prefix string
}

func (p ovsPrefixed) Run(ctx context.Context, cmd string) (remote.Result, error) {
	return p.Runner.Run(ctx, OVSCommand(p.prefix, cmd))
}

func (p ovsPrefixed) Start(ctx context.Context, cmd string) (remote.Process, error) {
	return p.Runner.Start(ctx, OVSCommand(p.prefix, cmd))
}
