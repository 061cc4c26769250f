package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// Connect opens SSH to both guests (retrying while they boot, interval
// "ssh_ready"), waits until they reach each other over the data network
// (interval "data_path", waitDataPath), and connects to the hypervisors they
// run on: over SSH, or with hypervisors.access: kubernetes into the OVS pod
// of each one's node.
func (pair *Pair) Connect(ctx context.Context) (err error) {
	ctx, end, err := pair.run.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	if pair.Topology == nil || len(pair.Topology.Servers) != 2 {
		return errors.New("connect: no provisioned pair of servers")
	}
	stop := pair.Timings.Track(results.PhaseSSHWait)
	defer stop()
	if err := pair.run.ensureDialer(); err != nil {
		return err
	}
	guests, err := pair.guestDialer()
	if err != nil {
		return err
	}
	ready := pair.run.Config.Interval(config.IntervalSSHReady)
	pair.Guests = make([]remote.Runner, len(pair.Topology.Servers))
	for i, srv := range pair.Topology.Servers {
		ep := config.SSHEndpoint{Address: srv.AccessIP(), User: pair.run.Config.GuestAccess.User, Jump: pair.run.guestJump()}
		name := fmt.Sprintf("guest %s (%s)", srv.Name, srv.AccessIP())
		pair.Logf("waiting for SSH on %s (up to %s)", name, ready.Timeout)
		c, err := guests.DialEndpoint(ctx, name, ep, false, ready)
		if err != nil {
			// Once, after the wait: a guest that never answers may be a
			// server that stopped or went to ERROR, or a port that is gone.
			err = pair.explainWait(ctx, "the SSH wait", fmt.Errorf("ssh to %s: %w", name, err))
			pair.Logf("SSH wait FAILED: %v", err)
			return err
		}
		pair.Guests[i] = pair.run.bounded(c)
	}
	if err := waitDataPath(ctx, pair.run.Config.Interval(config.IntervalDataPath), pair.Guests, pair.Topology.Servers, pair.Logf); err != nil {
		err = pair.explainWait(ctx, "the data path's wait", err)
		pair.Logf("data path wait FAILED: %v", err)
		return err
	}
	for _, srv := range pair.Topology.Servers {
		hv := srv.Hypervisor
		if hv == "" {
			if len(pair.run.Config.Offload.Checks) > 0 {
				return fmt.Errorf("server %s: hypervisor name unknown (needs cloud.admin) but offload checks must run on it", srv.Name)
			}
			continue
		}
		if _, done := pair.run.Hypervisors[hv]; done {
			continue
		}
		if pair.run.Config.Hypervisors.Access == config.HypervisorAccessKubernetes {
			if err := pair.connectKube(ctx, kubeaccess.Target{Hypervisor: hv, ServiceHost: srv.Host}); err != nil {
				return err
			}
			continue
		}
		r, err := pair.run.dialHypervisor(ctx, hv)
		if err != nil {
			return err
		}
		pair.run.Hypervisors[hv] = r
	}
	return nil
}

// connectKube maps hypervisor t to its Kubernetes node (its service host
// first: kube's Resolve), finds the node's OVS pod (hypervisors.kubernetes)
// and runs its commands there, logged in the same command log as SSH.
func (pair *Pair) connectKube(ctx context.Context, t kubeaccess.Target) error {
	hv := t.Hypervisor
	if err := pair.run.ensureKube(); err != nil {
		return err
	}
	r, m, err := pair.run.kube.Runner(ctx, t)
	if err != nil {
		return err
	}
	if pair.run.hvPods == nil {
		pair.run.hvPods = map[string]kubeaccess.Pod{}
	}
	pair.run.hvPods[hv] = r.Pod()
	pair.Logf("%s: commands run in %s on node %s (matched by %s)", hv, r.Pod(), r.Pod().Node, m.How)
	routed, ht, err := pair.kubeHostTools(ctx, hv, r, r.Pod().Node, pair.run.kube, func(p kubeaccess.Pod) (remote.Runner, error) { return pair.run.kube.RunnerIn(hv, p) })
	if pair.run.hvTools == nil {
		pair.run.hvTools = map[string]hostTools{}
	}
	pair.run.hvTools[hv] = ht
	if err != nil {
		return err
	}
	pair.run.Hypervisors[hv] = pair.run.bounded(routed)
	return nil
}

// guestDialer is the run's dialer with the host key policy for guests.
// Guests are new machines at every run, so no known_hosts file can hold
// their keys: with ssh.known_hosts set (which then verifies hypervisors and
// their jump hosts), guests' keys are trusted on first use and recorded in
// the run's ssh_known_hosts; a key that changes within the run is refused.
// Without known_hosts, or with the explicit insecure opt-in, guests share the
// run's policy.
func (pair *Pair) guestDialer() (*remote.Dialer, error) {
	if pair.run.Config.SSH.KnownHosts == "" || pair.run.Config.SSH.InsecureIgnoreHostKey {
		return pair.run.dialer, nil
	}
	hk, err := remote.NewHostKeys(remote.HostKeyConfig{TOFUFile: filepath.Join(pair.Dir, remote.TOFUFile)})
	if err != nil {
		return nil, fmt.Errorf("ssh: guest host keys: %w", err)
	}
	g := *pair.run.dialer
	g.HostKeys = hk
	return &g, nil
}

// CollectEnvironment records versions and NIC facts in the results file:
// iperf3 and kernel of both guests; OVS, kernel and `ethtool -i` of the
// representor (or the configured NIC) on both hypervisors. A fact that cannot
// be read is recorded as an error in the results, not fatal.
func (pair *Pair) CollectEnvironment(ctx context.Context) (err error) {
	ctx, end, err := pair.run.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	stop := pair.Timings.Track(results.PhaseEnvironment)
	defer stop()
	var problems []string
	run := func(r remote.Runner, cmd string) string {
		res, err := r.Run(ctx, cmd)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			problems = append(problems, err.Error())
			return ""
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	var env results.Environment
	for i, srv := range pair.Topology.Servers {
		role := "server"
		if i == 1 {
			role = "client"
		}
		g := results.Guest{Name: srv.Name, Role: role, Hypervisor: srv.Hypervisor}
		if out := run(pair.Guests[i], "iperf3 --version"); out != "" {
			g.Iperf3Version = strings.SplitN(out, "\n", 2)[0]
		}
		g.Kernel = run(pair.Guests[i], "uname -r")
		env.Guests = append(env.Guests, g)
	}
	pair.run.networkBackend(ctx, &env, &problems)
	for _, srv := range pair.Topology.Servers {
		if h, ok := pair.hypervisorFacts(ctx, srv, env.NetworkBackend, &problems); ok {
			env.Hypervisors = append(env.Hypervisors, h)
		}
	}
	for _, g := range env.Guests {
		if g.Iperf3Version != "" {
			if v, err := iperf3.ParseVersion(g.Iperf3Version); err == nil && !v.MultiThreaded() {
				split := "when they exceed the guest's vCPUs"
				if m := pair.run.Config.Traffic.MaxStreamsPerProcess; m > 0 {
					split = fmt.Sprintf("of at most %d streams each (traffic.max_streams_per_process)", m)
				}
				pair.Logf("note: %s runs %s, single-threaded before 3.16: a profile's streams are split over processes %s", g.Name, g.Iperf3Version, split)
			}
		}
	}
	if len(env.Guests) > 0 {
		env.GuestKernel = env.Guests[0].Kernel
	}
	err = pair.Results.Update(func(r *results.Results) {
		results.KeepIdentity(&env, r.Environment)
		r.Environment = env
		pair.run.recordPodMoves(r)
		for _, p := range problems {
			r.Errors = append(r.Errors, "environment: "+p)
		}
	})
	for _, p := range problems {
		pair.Logf("environment: %s", p)
	}
	return err
}

// hypervisorFacts reads what CollectEnvironment records of the hypervisor
// srv runs on: kernel, transport, OVS, ovn-controller and tc versions, and
// the representor of srv's data port with its `ethtool -i` (offload.NoEthtool
// as its driver where there is no ethtool). ok is false
// when there is no connection to it; what cannot be read is added to
// problems.
func (pair *Pair) hypervisorFacts(ctx context.Context, srv fixtures.Server, backend string, problems *[]string) (h results.Hypervisor, ok bool) {
	hvr, ok := pair.run.Hypervisors[srv.Hypervisor]
	if !ok {
		return h, false
	}
	run := func(r remote.Runner, cmd string) string {
		res, err := r.Run(ctx, cmd)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			*problems = append(*problems, err.Error())
			return ""
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	h = results.Hypervisor{Name: srv.Hypervisor, Kernel: run(hvr, "uname -r"), Transport: config.HypervisorAccessSSH,
		OVSCommandPrefix: pair.run.Config.Hypervisors.OVSCommandPrefix}
	if pod, ok := pair.run.hvPods[srv.Hypervisor]; ok {
		h.Transport, h.Pod, h.Container = config.HypervisorAccessKubernetes, podRef(pod), pod.Container
		ht := pair.run.hvTools[srv.Hypervisor]
		h.OVSContainerTools = ht.inOVS
		if ht.debug != nil {
			h.HostToolsPod, h.HostToolsContainer = podRef(*ht.debug), ht.debug.Container
		}
	}
	if out := run(hvr, "ovs-vsctl --version"); out != "" {
		v, err := envinfo.ParseOVSVersion([]byte(out))
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: ovs-vsctl --version: %v", srv.Hypervisor, err))
		}
		h.OVSVersion = v
	}
	h.OVNControllerVersion = pair.ovnControllerVersion(ctx, hvr, srv.Hypervisor, backend, problems)
	if out := run(hvr, "tc -V"); out != "" {
		v, err := envinfo.ParseTCVersion([]byte(out))
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: %v", srv.Hypervisor, err)) // the error names tc -V
		} else {
			h.TCVersion = v.String()
		}
	}
	nic, err := pair.representor(ctx, srv.Hypervisor, srv.DataPortID)
	if err != nil {
		*problems = append(*problems, err.Error())
	} else {
		h.NIC = nic
		if out, ok := pair.ethtoolInfo(ctx, hvr, nic, problems); !ok {
			h.NICDriver = offload.NoEthtool
		} else if out != "" {
			info, err := envinfo.ParseEthtoolInfo([]byte(out))
			if err != nil {
				*problems = append(*problems, fmt.Sprintf("%s: ethtool -i %s: %v", srv.Hypervisor, nic, err))
			} else {
				h.NICDriver, h.NICDriverVersion, h.NICBusInfo = info.Driver, info.Version, info.BusInfo
				h.NICFirmware = info.FirmwareVersion
			}
		}
		if h.NICBusInfo != "" {
			h.NICFirmwareRunning, h.NICFirmwareStored = pair.nicFirmware(ctx, hvr, srv.Hypervisor, h.NICBusInfo, problems)
		}
	}
	return h, true
}

// ethtoolInfo is `ethtool -i nic` on hv; ok is false where there is no
// ethtool (exit 127): it is optional (offload.OptionalTools), so that is
// no problem of the environment. Another failure is.
func (pair *Pair) ethtoolInfo(ctx context.Context, hv remote.Runner, nic string, problems *[]string) (out string, ok bool) {
	res, err := hv.Run(ctx, "ethtool -i "+nic)
	switch {
	case err != nil:
		*problems = append(*problems, err.Error())
		return "", true
	case res.ExitCode == 127:
		return "", false
	case !res.OK():
		*problems = append(*problems, res.Err().Error())
		return "", true
	}
	return strings.TrimSpace(string(res.Stdout)), true
}

// OVNVersionCommand asks a hypervisor's ovn-controller its version: the
// binary where it is installed, else the running daemon over its control
// socket (where the binary is in another container than the commands run
// in but the socket is shared).
const OVNVersionCommand = "ovn-controller --version 2>/dev/null || ovn-appctl -t ovn-controller version"

// networkBackend records the ML2 backend from Neutron's agent list (admin
// only): ml2/ovn, ml2/ovs, and the agents by type. Without admin
// credentials it is not known, and the log says so; a failed list is a
// problem of the environment, never a failed run.
func (run *Run) networkBackend(ctx context.Context, env *results.Environment, problems *[]string) {
	if run.Clients == nil || run.Clients.Admin == nil {
		run.Logf("environment: no admin credentials: Neutron's agent list (the network backend, ML2/OVS or ML2/OVN) is admin-only, not recorded")
		return
	}
	list, err := fixtures.ListNetworkAgents(ctx, run.Clients.Admin.Network)
	if err != nil {
		*problems = append(*problems, err.Error())
		return
	}
	env.NetworkBackend, env.NetworkAgents = fixtures.NetworkBackend(list)
	if env.NetworkBackend == "" {
		run.Logf("environment: Neutron lists no Open vSwitch or OVN controller agent (%d agents: %s): network backend not known", len(list), strings.Join(env.NetworkAgents, "; "))
	}
}

// ovnControllerVersion is hv's ovn-controller version
// (envinfo.ParseOVNVersion), "" when there is none to ask. Its absence is
// said in the log on an ML2/OVN cloud (the commands may run where OVN's
// binaries and socket are not); output that names no version is a problem.
func (pair *Pair) ovnControllerVersion(ctx context.Context, hv remote.Runner, name, backend string, problems *[]string) string {
	res, err := hv.Run(ctx, OVNVersionCommand)
	if err != nil {
		*problems = append(*problems, err.Error())
		return ""
	}
	if !res.OK() {
		if strings.Contains(backend, fixtures.BackendOVN) {
			pair.Logf("environment: %s: no ovn-controller version where the hypervisor commands run (%s, exit %d: %s)", name, OVNVersionCommand, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
		}
		return ""
	}
	v, err := envinfo.ParseOVNVersion(res.Stdout)
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", name, err))
		return ""
	}
	return v.String()
}

// CheckDataPath proves the guests see their data ports and reach each other
// over them: each guest has an interface with its data port's MAC carrying
// its data IP, and each pings the other's data IP. Every problem is listed.
func (pair *Pair) CheckDataPath(ctx context.Context) (err error) {
	ctx, end, err := pair.run.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	var errs []error
	for i, srv := range pair.Topology.Servers {
		g := pair.Guests[i]
		res, err := g.Run(ctx, "ip -o link show; ip -o -4 addr show")
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dev := interfaceWithMAC(string(res.Stdout), srv.DataMAC)
		switch {
		case dev == "":
			errs = append(errs, fmt.Errorf("%s: no interface has the data port's MAC %s", srv.Name, srv.DataMAC))
		case !hasAddr(string(res.Stdout), dev, srv.DataIP):
			errs = append(errs, fmt.Errorf("%s: interface %s (MAC %s) does not carry the data IP %s", srv.Name, dev, srv.DataMAC, srv.DataIP))
		}
		peer := pair.Topology.Servers[1-i]
		ping, err := g.Run(ctx, fmt.Sprintf("ping -c 3 -i 0.2 -W 2 %s", peer.DataIP))
		if err == nil {
			err = ping.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s cannot ping %s's data IP %s: %w", srv.Name, peer.Name, peer.DataIP, err))
		}
	}
	return errors.Join(errs...)
}

// interfaceWithMAC finds the interface whose link/ether is mac in
// `ip -o link show` output, e.g.
// "3: eth1@if12: <BROADCAST,...> mtu 8950 ... link/ether fa:16:3e:aa:bb:cc brd ff:ff:ff:ff:ff:ff".
func interfaceWithMAC(out, mac string) string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "link/ether" && strings.EqualFold(f[i+1], mac) && len(f) > 1 {
				name := strings.TrimSuffix(f[1], ":")
				if at := strings.IndexByte(name, '@'); at >= 0 {
					name = name[:at]
				}
				return name
			}
		}
	}
	return ""
}

// hasAddr reports whether `ip -o -4 addr show` output gives dev the address ip,
// e.g. "3: eth1    inet 198.18.10.5/24 brd 198.18.10.255 scope global eth1".
func hasAddr(out, dev, ip string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && strings.TrimSuffix(f[1], ":") == dev && f[2] == "inet" && strings.HasPrefix(f[3], ip+"/") {
			return true
		}
	}
	return false
}
