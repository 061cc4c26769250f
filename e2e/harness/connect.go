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
func (s *Session) Connect(ctx context.Context) (err error) {
	ctx, end, err := s.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	if s.Topology == nil || len(s.Topology.Servers) != 2 {
		return errors.New("connect: no provisioned pair of servers")
	}
	stop := s.Timings.Track(results.PhaseSSHWait)
	defer stop()
	if err := s.ensureDialer(); err != nil {
		return err
	}
	guests, err := s.guestDialer()
	if err != nil {
		return err
	}
	ready := s.Config.Interval(config.IntervalSSHReady)
	s.Guests = make([]remote.Runner, len(s.Topology.Servers))
	for i, srv := range s.Topology.Servers {
		ep := config.SSHEndpoint{Address: srv.AccessIP(), User: s.Config.GuestAccess.User, Jump: s.guestJump()}
		name := fmt.Sprintf("guest %s (%s)", srv.Name, srv.AccessIP())
		s.Logf("waiting for SSH on %s (up to %s)", name, ready.Timeout)
		c, err := guests.DialEndpoint(ctx, name, ep, false, ready)
		if err != nil {
			// Once, after the wait: a guest that never answers may be a
			// server that stopped or went to ERROR, or a port that is gone.
			err = s.explainWait(ctx, "the SSH wait", fmt.Errorf("ssh to %s: %w", name, err))
			s.Logf("SSH wait FAILED: %v", err)
			return err
		}
		s.Guests[i] = s.bounded(c)
	}
	if err := waitDataPath(ctx, s.Config.Interval(config.IntervalDataPath), s.Guests, s.Topology.Servers, s.Logf); err != nil {
		err = s.explainWait(ctx, "the data path's wait", err)
		s.Logf("data path wait FAILED: %v", err)
		return err
	}
	for _, srv := range s.Topology.Servers {
		hv := srv.Hypervisor
		if hv == "" {
			if len(s.Config.Offload.Checks) > 0 {
				return fmt.Errorf("server %s: hypervisor name unknown (needs cloud.admin) but offload checks must run on it", srv.Name)
			}
			continue
		}
		if _, done := s.Hypervisors[hv]; done {
			continue
		}
		if s.Config.Hypervisors.Access == config.HypervisorAccessKubernetes {
			if err := s.connectKube(ctx, kubeaccess.Target{Hypervisor: hv, ServiceHost: srv.Host}); err != nil {
				return err
			}
			continue
		}
		r, err := s.dialHypervisor(ctx, hv)
		if err != nil {
			return err
		}
		s.Hypervisors[hv] = r
	}
	return nil
}

// dialHypervisor opens SSH to hypervisor hv (hypervisors.hosts). Every OVS
// command on it goes through the configured prefix (offload.OVSCommand);
// tc, ip, tcpdump, ethtool do not. s.hvDial replaces it in tests.
func (s *Session) dialHypervisor(ctx context.Context, hv string) (remote.Runner, error) {
	if s.hvDial != nil {
		return s.hvDial(ctx, hv)
	}
	ep, err := remote.HypervisorEndpoint(s.Config.Hypervisors, hv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Config.File, err)
	}
	if err := s.ensureDialer(); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("hypervisor %s (%s)", hv, ep.Address)
	c, err := s.dialer.DialEndpoint(ctx, name, ep, s.Config.Hypervisors.Sudo, s.Config.Interval(config.IntervalHypervisorSSH))
	if err != nil {
		return nil, fmt.Errorf("ssh to %s: %w", name, err)
	}
	return offload.WithOVSPrefix(s.bounded(c), s.Config.Hypervisors.OVSCommandPrefix), nil
}

// ensureDialer opens the run's SSH dialer and its command log
// (<run dir>/commands.jsonl) once.
func (s *Session) ensureDialer() error {
	if s.dialer != nil {
		return nil
	}
	d, err := remote.NewDialer(s.Config.SSH, s.Dir, func(msg string) { s.Logf("WARNING: %s", msg) })
	if err != nil {
		return fmt.Errorf("ssh: %w", err)
	}
	d.Log.SetGuard(s.Refused, s.Failed)
	s.dialer = d
	return nil
}

// ensureKube opens the Kubernetes cluster of hypervisors.access:
// kubernetes once (the dialer first: the cluster logs in its command log);
// its runners' moves to replacement pods come to podReplaced.
func (s *Session) ensureKube() error {
	if s.kube != nil {
		return nil
	}
	c, err := s.openCluster(kubeaccess.Options{Log: s.dialer.Log, KillGrace: s.dialer.KillGrace, API: s.Config.Interval(config.IntervalKubeAPI),
		Logf: s.Logf, Replaced: s.podReplaced})
	if err != nil {
		return err
	}
	s.kube = c
	return nil
}

// connectKube maps hypervisor t to its Kubernetes node (its service host
// first: kube's Resolve), finds the node's OVS pod (hypervisors.kubernetes)
// and runs its commands there, logged in the same command log as SSH.
func (s *Session) connectKube(ctx context.Context, t kubeaccess.Target) error {
	hv := t.Hypervisor
	if err := s.ensureKube(); err != nil {
		return err
	}
	r, m, err := s.kube.Runner(ctx, t)
	if err != nil {
		return err
	}
	if s.hvPods == nil {
		s.hvPods = map[string]kubeaccess.Pod{}
	}
	s.hvPods[hv] = r.Pod()
	s.Logf("%s: commands run in %s on node %s (matched by %s)", hv, r.Pod(), r.Pod().Node, m.How)
	routed, ht, err := s.kubeHostTools(ctx, hv, r, r.Pod().Node, s.kube, func(p kubeaccess.Pod) (remote.Runner, error) { return s.kube.RunnerIn(hv, p) })
	if s.hvTools == nil {
		s.hvTools = map[string]hostTools{}
	}
	s.hvTools[hv] = ht
	if err != nil {
		return err
	}
	s.Hypervisors[hv] = s.bounded(routed)
	return nil
}

// bounded gives every command on r a deadline: its own (remote.WithBound,
// e.g. an iperf3 client's -t + -O + grace) or intervals.command.
func (s *Session) bounded(r remote.Runner) remote.Runner {
	return remote.Bounded(r, s.Config.Interval(config.IntervalCommand).Timeout, "intervals.command")
}

// guestDialer is the run's dialer with the host key policy for guests.
// Guests are new machines at every run, so no known_hosts file can hold
// their keys: with ssh.known_hosts set (which then verifies hypervisors and
// their jump hosts), guests' keys are trusted on first use and recorded in
// the run's ssh_known_hosts; a key that changes within the run is refused.
// Without known_hosts, or with the explicit insecure opt-in, guests share the
// run's policy.
func (s *Session) guestDialer() (*remote.Dialer, error) {
	if s.Config.SSH.KnownHosts == "" || s.Config.SSH.InsecureIgnoreHostKey {
		return s.dialer, nil
	}
	hk, err := remote.NewHostKeys(remote.HostKeyConfig{TOFUFile: filepath.Join(s.Dir, remote.TOFUFile)})
	if err != nil {
		return nil, fmt.Errorf("ssh: guest host keys: %w", err)
	}
	g := *s.dialer
	g.HostKeys = hk
	return &g, nil
}

func (s *Session) guestJump() *config.SSHEndpoint {
	if s.Config.GuestAccess.Mode == config.AccessJump {
		return s.Config.GuestAccess.Jump
	}
	return nil
}

// CollectEnvironment records versions and NIC facts in the results file:
// iperf3 and kernel of both guests; OVS, kernel and `ethtool -i` of the
// representor (or the configured NIC) on both hypervisors. A fact that cannot
// be read is recorded as an error in the results, not fatal.
func (s *Session) CollectEnvironment(ctx context.Context) (err error) {
	ctx, end, err := s.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	stop := s.Timings.Track(results.PhaseEnvironment)
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
	for i, srv := range s.Topology.Servers {
		role := "server"
		if i == 1 {
			role = "client"
		}
		g := results.Guest{Name: srv.Name, Role: role, Hypervisor: srv.Hypervisor}
		if out := run(s.Guests[i], "iperf3 --version"); out != "" {
			g.Iperf3Version = strings.SplitN(out, "\n", 2)[0]
		}
		g.Kernel = run(s.Guests[i], "uname -r")
		env.Guests = append(env.Guests, g)
	}
	s.networkBackend(ctx, &env, &problems)
	for _, srv := range s.Topology.Servers {
		if h, ok := s.hypervisorFacts(ctx, srv, env.NetworkBackend, &problems); ok {
			env.Hypervisors = append(env.Hypervisors, h)
		}
	}
	for _, g := range env.Guests {
		if g.Iperf3Version != "" {
			if v, err := iperf3.ParseVersion(g.Iperf3Version); err == nil && !v.MultiThreaded() {
				s.Logf("note: %s runs %s, single-threaded before 3.16: streams are split over processes when they exceed the guest's vCPUs", g.Name, g.Iperf3Version)
			}
		}
	}
	if len(env.Guests) > 0 {
		env.GuestKernel = env.Guests[0].Kernel
	}
	err = s.Results.Update(func(r *results.Results) {
		results.KeepIdentity(&env, r.Environment)
		r.Environment = env
		s.recordPodMoves(r)
		for _, p := range problems {
			r.Errors = append(r.Errors, "environment: "+p)
		}
	})
	for _, p := range problems {
		s.Logf("environment: %s", p)
	}
	return err
}

// hypervisorFacts reads what CollectEnvironment records of the hypervisor
// srv runs on: kernel, transport, OVS, ovn-controller and tc versions, and
// the representor of srv's data port with its `ethtool -i` (offload.NoEthtool
// as its driver where there is no ethtool). ok is false
// when there is no connection to it; what cannot be read is added to
// problems.
func (s *Session) hypervisorFacts(ctx context.Context, srv fixtures.Server, backend string, problems *[]string) (h results.Hypervisor, ok bool) {
	hvr, ok := s.Hypervisors[srv.Hypervisor]
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
		OVSCommandPrefix: s.Config.Hypervisors.OVSCommandPrefix}
	if pod, ok := s.hvPods[srv.Hypervisor]; ok {
		h.Transport, h.Pod, h.Container = config.HypervisorAccessKubernetes, podRef(pod), pod.Container
		ht := s.hvTools[srv.Hypervisor]
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
	h.OVNControllerVersion = s.ovnControllerVersion(ctx, hvr, srv.Hypervisor, backend, problems)
	if out := run(hvr, "tc -V"); out != "" {
		v, err := envinfo.ParseTCVersion([]byte(out))
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: %v", srv.Hypervisor, err)) // the error names tc -V
		} else {
			h.TCVersion = v.String()
		}
	}
	nic, err := s.representor(ctx, srv.Hypervisor, srv.DataPortID)
	if err != nil {
		*problems = append(*problems, err.Error())
	} else {
		h.NIC = nic
		if out, ok := s.ethtoolInfo(ctx, hvr, nic, problems); !ok {
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
			h.NICFirmwareRunning, h.NICFirmwareStored = s.nicFirmware(ctx, hvr, srv.Hypervisor, h.NICBusInfo, problems)
		}
	}
	return h, true
}

// ethtoolInfo is `ethtool -i nic` on hv; ok is false where there is no
// ethtool (exit 127): it is optional (offload.OptionalTools), so that is
// no problem of the environment. Another failure is.
func (s *Session) ethtoolInfo(ctx context.Context, hv remote.Runner, nic string, problems *[]string) (out string, ok bool) {
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
func (s *Session) networkBackend(ctx context.Context, env *results.Environment, problems *[]string) {
	if s.Clients == nil || s.Clients.Admin == nil {
		s.Logf("environment: no admin credentials: Neutron's agent list (the network backend, ML2/OVS or ML2/OVN) is admin-only, not recorded")
		return
	}
	list, err := fixtures.ListNetworkAgents(ctx, s.Clients.Admin.Network)
	if err != nil {
		*problems = append(*problems, err.Error())
		return
	}
	env.NetworkBackend, env.NetworkAgents = fixtures.NetworkBackend(list)
	if env.NetworkBackend == "" {
		s.Logf("environment: Neutron lists no Open vSwitch or OVN controller agent (%d agents: %s): network backend not known", len(list), strings.Join(env.NetworkAgents, "; "))
	}
}

// ovnControllerVersion is hv's ovn-controller version
// (envinfo.ParseOVNVersion), "" when there is none to ask. Its absence is
// said in the log on an ML2/OVN cloud (the commands may run where OVN's
// binaries and socket are not); output that names no version is a problem.
func (s *Session) ovnControllerVersion(ctx context.Context, hv remote.Runner, name, backend string, problems *[]string) string {
	res, err := hv.Run(ctx, OVNVersionCommand)
	if err != nil {
		*problems = append(*problems, err.Error())
		return ""
	}
	if !res.OK() {
		if strings.Contains(backend, fixtures.BackendOVN) {
			s.Logf("environment: %s: no ovn-controller version where the hypervisor commands run (%s, exit %d: %s)", name, OVNVersionCommand, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
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
func (s *Session) CheckDataPath(ctx context.Context) (err error) {
	ctx, end, err := s.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	var errs []error
	for i, srv := range s.Topology.Servers {
		g := s.Guests[i]
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
		peer := s.Topology.Servers[1-i]
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
