package harness

import (
	"context"
	"fmt"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// The run's access to the machines its pairs use, opened once and shared
// by every pair: the SSH dialer and its command log, the Kubernetes
// cluster of hypervisors.access: kubernetes, a hypervisor's SSH runner.

// dialHypervisor opens SSH to hypervisor hv (hypervisors.hosts). Every OVS
// command on it goes through the configured prefix (offload.OVSCommand);
// tc, ip, tcpdump, ethtool do not. run.hvDial replaces it in tests.
func (run *Run) dialHypervisor(ctx context.Context, hv string) (remote.Runner, error) {
	if run.hvDial != nil {
		return run.hvDial(ctx, hv)
	}
	ep, err := remote.HypervisorEndpoint(run.Config.Hypervisors, hv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", run.Config.File, err)
	}
	if err := run.ensureDialer(); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("hypervisor %s (%s)", hv, ep.Address)
	c, err := run.dialer.DialEndpoint(ctx, name, ep, run.Config.Hypervisors.Sudo, run.Config.Interval(config.IntervalHypervisorSSH))
	if err != nil {
		return nil, fmt.Errorf("ssh to %s: %w", name, err)
	}
	return offload.WithOVSPrefix(run.bounded(c), run.Config.Hypervisors.OVSCommandPrefix), nil
}

// ensureDialer opens the run's SSH dialer and its command log
// (<run dir>/commands.jsonl) once.
func (run *Run) ensureDialer() error {
	if run.dialer != nil {
		return nil
	}
	d, err := remote.NewDialer(run.Config.SSH, run.Dir, func(msg string) { run.Logf("WARNING: %s", msg) })
	if err != nil {
		return fmt.Errorf("ssh: %w", err)
	}
	d.Log.SetGuard(run.Refused, run.Failed)
	run.dialer = d
	return nil
}

// ensureKube opens the Kubernetes cluster of hypervisors.access:
// kubernetes once (the dialer first: the cluster logs in its command log);
// its runners' moves to replacement pods come to podReplaced.
func (run *Run) ensureKube() error {
	if run.kube != nil {
		return nil
	}
	c, err := run.openCluster(kubeaccess.Options{Log: run.dialer.Log, KillGrace: run.dialer.KillGrace, API: run.Config.Interval(config.IntervalKubeAPI),
		Logf: run.Logf, Replaced: run.podReplaced})
	if err != nil {
		return err
	}
	run.kube = c
	return nil
}

// bounded gives every command on r a deadline: its own (remote.WithBound,
// e.g. an iperf3 client's -t + -O + grace) or intervals.command.
func (run *Run) bounded(r remote.Runner) remote.Runner {
	return remote.Bounded(r, run.Config.Interval(config.IntervalCommand).Timeout, "intervals.command")
}

func (run *Run) guestJump() *config.SSHEndpoint {
	if run.Config.GuestAccess.Mode == config.AccessJump {
		return run.Config.GuestAccess.Jump
	}
	return nil
}
