package iperf3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Version is an iperf3 version as `iperf3 --version` or start.version print it.
type Version struct {
	Major, Minor int
	Raw          string // e.g. "iperf 3.12 (cJSON 1.7.15)"
}

// MultiThreadedSince is the first iperf3 release that runs each stream in
// its own thread (3.16, esnet/iperf release notes); older releases drive
// every stream of a process from one thread, i.e. one CPU core.
var MultiThreadedSince = Version{Major: 3, Minor: 16}

// MultiThreaded reports whether this iperf3 gives every stream its own thread.
func (v Version) MultiThreaded() bool { return v.AtLeast(MultiThreadedSince) }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

var versionRE = regexp.MustCompile(`iperf (\d+)\.(\d+)`)

// ParseVersion reads "iperf 3.12 (cJSON 1.7.15)\nLinux ..." (iperf3
// --version) or "iperf 3.16" (start.version of the JSON).
func ParseVersion(s string) (Version, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
		return Version{}, fmt.Errorf("no iperf3 version in %q", first)
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	if err := errors.Join(err1, err2); err != nil {
		return Version{}, fmt.Errorf("iperf3 version %q: %w", m[0], err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return Version{Major: major, Minor: minor, Raw: first}, nil
}

// RunInput is everything Run needs for one profile run.
type RunInput struct {
	Server, Client remote.Runner
	// ServerAddr is the server guest's address on the measured (data)
	// network; the server binds to it (-B) so traffic cannot take another NIC.
	ServerAddr string
	Profile    Profile
	Duration   time.Duration // iperf3 -t, whole seconds >= 1
	Omit       time.Duration // iperf3 -O, whole seconds >= 0
	BasePort   int           // first server port; process i uses BasePort+i
	// MaxStreamsPerProcess splits the streams over ceil(streams/max)
	// processes; 0 = automatic: split over min(streams, GuestVCPUs)
	// processes only when iperf3 is single-threaded (< 3.16).
	MaxStreamsPerProcess int
	GuestVCPUs           int // vCPUs of the guests (flavor); 0 = unknown
	// ListenTimeout bounds the wait for the servers to listen, and the
	// wait for them to exit after the clients are done; ListenPoll is how
	// often listening is checked (config interval "iperf_server").
	// ListenTimeout is also the clients' --connect-timeout (Guards.Connect).
	ListenTimeout, ListenPoll time.Duration
	// StallTimeout is iperf3's own guard against a silent peer
	// (Guards.Stall, config traffic.stall_timeout): --rcv-timeout on the
	// server, and --snd-timeout on both sides of a TCP profile, where the
	// versions have them. 0 = none. It must be shorter than ListenTimeout,
	// so that iperf3 gives up before the harness's bound (-t + -O +
	// ListenTimeout) cuts the client.
	StallTimeout time.Duration
	// UDPSetupRetries is how many times a UDP run that failed at stream
	// setup (UDPSetupFailure) is run again, after UDPSetupBackoff; 0 = never
	// (config traffic.udp_setup_retries, traffic.udp_setup_backoff). TCP runs
	// and UDP runs that failed after traffic flowed are never run again.
	UDPSetupRetries int
	UDPSetupBackoff time.Duration
	// ClientsStarting, when set, is called with the time at which the
	// clients are launched: every server listens by then, so it is the moment
	// the flow's traffic starts (the evidence window counts its settle time
	// from it, not from when Run was called: version queries, server start and
	// the listen wait come first and take seconds). It is called once per
	// attempt: a UDP setup retry launches the clients again and calls it
	// again with the new time (only when UDPSetupRetries > 0).
	ClientsStarting func(time.Time)
	// ClientsDone, when set, is called with the time at which every client
	// of an attempt has returned (the traffic is over), success or not,
	// before Run waits for the servers to exit; once per attempt, like
	// ClientsStarting.
	ClientsDone func(time.Time)
	// Interval is iperf3's reporting interval (-i) on the server and the
	// client (IntervalFlag); 0 = iperf3's 1 s. The failover profile reads
	// its gaps from the receiver's 0.1 s intervals.
	Interval time.Duration
}

// ProcessRun is one iperf3 client/server pair of a run, with its raw output
// for the evidence directory.
type ProcessRun struct {
	Port         int    `json:"port"`
	Streams      int    `json:"streams"`
	ServerCmd    string `json:"server_cmd"`
	ClientCmd    string `json:"client_cmd"`
	ClientJSON   []byte `json:"-"` // client stdout (iperf3 -J, with server_output_json)
	ClientStderr []byte `json:"-"`
	ServerJSON   []byte `json:"-"` // server stdout (iperf3 -s -J)
	ServerStderr []byte `json:"-"`
	ClientExit   int    `json:"client_exit"`
	ServerExit   int    `json:"server_exit"`
	// ClientEnded is when the client's command returned, on the harness's
	// clock (EndSpread: did a split's processes run at once?).
	ClientEnded time.Time `json:"client_ended,omitzero"`
	Result      Result    `json:"result"`
	Error       string    `json:"error,omitempty"`
	// ClientLook is LookCommand's output on the client's guest, taken when
	// the client reached its bound, just before it was killed (nil when it
	// was not); ClientLookError is why the look failed, if it did.
	ClientLook      []byte `json:"-"`
	ClientLookError string `json:"client_look_error,omitempty"`
}

// Measurement is the outcome of Run: the summed Result plus everything
// needed to re-check it.
type Measurement struct {
	Profile       Profile      `json:"profile"`
	Result        Result       `json:"result"`
	ClientVersion Version      `json:"client_iperf3"`
	ServerVersion Version      `json:"server_iperf3"`
	Processes     []ProcessRun `json:"processes"`
	Warnings      []string     `json:"warnings,omitempty"`
	// Guards are iperf3's own dead-peer timeouts the commands carry.
	Guards GuardFlags `json:"guards"`
	// SetupRetries are the UDP attempts abandoned at stream setup and run
	// again, in order; Processes are the last attempt's.
	SetupRetries []SetupRetry `json:"setup_retries,omitempty"`
}

func (in RunInput) validate() error {
	var errs []error
	if in.Server == nil || in.Client == nil {
		errs = append(errs, errors.New("server and client runners are required"))
	}
	if !remote.ValidAddress(in.ServerAddr) {
		errs = append(errs, fmt.Errorf("server address: not an IP address or host name, got %q", in.ServerAddr))
	}
	if in.Profile.Streams < 1 || (in.Profile.Protocol != TCP && in.Profile.Protocol != UDP) {
		errs = append(errs, fmt.Errorf("profile %q: needs TCP/UDP and >= 1 stream, got %s with %d", in.Profile.ID, in.Profile.Protocol, in.Profile.Streams))
	}
	if in.Profile.ClientPort != 0 && (in.Profile.Streams != 1 || in.Profile.ClientPort < 1 || in.Profile.ClientPort > 65535) {
		errs = append(errs, fmt.Errorf("profile %q: a pinned client port (--cport) needs one stream and a port 1..65535, got %d streams and port %d", in.Profile.ID, in.Profile.Streams, in.Profile.ClientPort))
	}
	if in.Duration < time.Second || in.Duration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("duration: iperf3 -t takes whole seconds >= 1, got %s", in.Duration))
	}
	if in.Omit < 0 || in.Omit%time.Second != 0 {
		errs = append(errs, fmt.Errorf("omit: iperf3 -O takes whole seconds >= 0, got %s", in.Omit))
	}
	if in.MaxStreamsPerProcess < 0 || in.GuestVCPUs < 0 {
		errs = append(errs, fmt.Errorf("max streams per process and guest vCPUs must be >= 0, got %d and %d", in.MaxStreamsPerProcess, in.GuestVCPUs))
	}
	if in.ListenTimeout <= 0 || in.ListenPoll <= 0 {
		errs = append(errs, fmt.Errorf("listen timeout and poll must be > 0, got %s and %s", in.ListenTimeout, in.ListenPoll))
	}
	if in.StallTimeout != 0 && (in.StallTimeout < MinRcvTimeout || in.StallTimeout >= in.ListenTimeout) {
		errs = append(errs, fmt.Errorf("stall timeout: must be 0 or from %s (iperf3's minimum) up to below the listen timeout %s (so iperf3 gives up before the harness's bound), got %s",
			MinRcvTimeout, in.ListenTimeout, in.StallTimeout))
	}
	if in.UDPSetupRetries < 0 || in.UDPSetupBackoff < 0 {
		errs = append(errs, fmt.Errorf("UDP setup retries and back-off must be >= 0, got %d and %s", in.UDPSetupRetries, in.UDPSetupBackoff))
	}
	if in.BasePort < 1 || in.BasePort > 65535 {
		errs = append(errs, fmt.Errorf("base port: must be 1..65535, got %d", in.BasePort))
	}
	return errors.Join(errs...)
}

// SplitStreams decides how many iperf3 processes carry a profile's streams
// and how many streams each gets (as even as possible), with warnings about
// single-threaded iperf3.
func SplitStreams(streams, maxPerProcess, guestVCPUs int, v Version) (perProcess []int, warnings []string) {
	n := 1
	switch {
	case maxPerProcess > 0:
		n = (streams + maxPerProcess - 1) / maxPerProcess
	case !v.MultiThreaded() && guestVCPUs > 1 && streams > 1:
		n = min(streams, guestVCPUs)
	}
	n = max(1, min(n, streams))
	for i := range n {
		s := streams / n
		if i < streams%n {
			s++
		}
		perProcess = append(perProcess, s)
	}
	if !v.MultiThreaded() && perProcess[0] > 1 {
		// The advice follows what decided the split: a limit already set
		// is not news to the reader (the lab sets one on purpose).
		split := fmt.Sprintf("%d process(es), guest vCPUs %s", n, vcpuText(guestVCPUs))
		advice := "set traffic.max_streams_per_process or use iperf3 >= " + MultiThreadedSince.String()
		if maxPerProcess > 0 {
			split = fmt.Sprintf("%d process(es) of at most %d streams, guest vCPUs %s", n, maxPerProcess, vcpuText(guestVCPUs))
			advice = "iperf3 >= " + MultiThreadedSince.String() + " runs each stream in a thread of its own"
		}
		warnings = append(warnings, fmt.Sprintf(
			"iperf3 %s is single-threaded (before %s): %d streams share one CPU core per process (%s); the rate may be CPU bound — %s",
			v, MultiThreadedSince, perProcess[0], split, advice))
	}
	if guestVCPUs > 0 && n > guestVCPUs {
		warnings = append(warnings, fmt.Sprintf("%d iperf3 processes on a guest with %d vCPUs", n, guestVCPUs))
	}
	return perProcess, warnings
}

func vcpuText(n int) string {
	if n == 0 {
		return "unknown"
	}
	return strconv.Itoa(n)
}

// ServerCommand is the iperf3 server command for one port: one test, JSON,
// bound to the data address, with the server's guard flags
// (GuardFlags.Server: what the server's version has).
func ServerCommand(addr string, port int, guards []string) string {
	return strings.Join(append([]string{"iperf3", "-s", "-1", "-J", "-B", addr, "-p", strconv.Itoa(port)}, guards...), " ")
}

// ClientCommand is the iperf3 client command for one process of a profile,
// with the client's guard flags (GuardFlags.Client: what the client's
// version has). --get-server-output puts the server's (receiver's) intervals
// into the client JSON (server_output_json), so the evidence has both sides.
func ClientCommand(addr string, port int, p Profile, streams int, duration, omit time.Duration, guards []string) string {
	args := []string{"iperf3", "-c", addr, "-p", strconv.Itoa(port), "-J", "--get-server-output",
		"-t", strconv.Itoa(int(duration / time.Second))}
	if omit > 0 {
		args = append(args, "-O", strconv.Itoa(int(omit/time.Second)))
	}
	args = append(args, guards...)
	args = append(args, p.ClientArgs(streams)...)
	return strings.Join(args, " ")
}

// Run runs one profile: checks iperf3 on both guests, starts one server per
// process on consecutive ports, waits until they listen, runs the clients
// concurrently, parses and sums their output, and stops every server it
// started before returning — on success, error and cancellation alike.
//
// The commands carry iperf3's own guards where the versions have them
// (Guards, recorded in Measurement.Guards). A UDP run that fails at stream
// setup is run again up to UDPSetupRetries times (Measurement.SetupRetries
// records each, with its reason and time).
//
// The returned Measurement carries the raw JSON of every process even when
// err is non-nil, so a failed run still leaves its evidence.
func Run(ctx context.Context, in RunInput) (m Measurement, err error) {
	m = Measurement{Profile: in.Profile}
	if err := in.validate(); err != nil {
		return m, fmt.Errorf("iperf3 run %s: %w", in.Profile.ID, err)
	}
	if m.ClientVersion, err = remoteVersion(ctx, in.Client); err != nil {
		return m, err
	}
	if m.ServerVersion, err = remoteVersion(ctx, in.Server); err != nil {
		return m, err
	}
	if m.ClientVersion.String() != m.ServerVersion.String() {
		m.Warnings = append(m.Warnings, fmt.Sprintf("iperf3 versions differ: client %s, server %s", m.ClientVersion, m.ServerVersion))
	}
	oldest := m.ClientVersion
	if !m.ServerVersion.MultiThreaded() {
		oldest = m.ServerVersion
	}
	split, warns := SplitStreams(in.Profile.Streams, in.MaxStreamsPerProcess, in.GuestVCPUs, oldest)
	m.Warnings = append(m.Warnings, warns...)
	if last := in.BasePort + len(split) - 1; last > 65535 {
		return m, fmt.Errorf("iperf3 run %s: %d processes from base port %d exceed port 65535", in.Profile.ID, len(split), in.BasePort)
	}
	m.Guards = Guards{Connect: in.ListenTimeout, Stall: in.StallTimeout}.Flags(in.Profile, m.ClientVersion, m.ServerVersion)
	if w := m.Guards.warning(); w != "" {
		m.Warnings = append(m.Warnings, w)
	}
	for i, s := range split {
		port := in.BasePort + i
		m.Processes = append(m.Processes, ProcessRun{
			Port: port, Streams: s,
			ServerCmd: ServerCommand(in.ServerAddr, port, append(slices.Clone(m.Guards.Server), IntervalFlag(in.Interval)...)),
			ClientCmd: ClientCommand(in.ServerAddr, port, in.Profile, s, in.Duration, in.Omit, append(slices.Clone(m.Guards.Client), IntervalFlag(in.Interval)...)),
		})
	}
	for {
		failed, err := runAttempt(ctx, in, m.Processes)
		if err == nil {
			break
		}
		reason, setup := "", false
		if in.Profile.Protocol == UDP && failed >= 0 {
			reason, setup = UDPSetupFailure(m.Processes[failed].ClientJSON)
		}
		if !setup || len(m.SetupRetries) >= in.UDPSetupRetries {
			return m, fmt.Errorf("iperf3 run %s: %w", in.Profile.ID, afterRetries(err, m.SetupRetries, setup))
		}
		retry := SetupRetry{
			At:        time.Now().UTC(),
			Reason:    fmt.Sprintf("port %d: %s", m.Processes[failed].Port, reason),
			Processes: append([]ProcessRun(nil), m.Processes...),
		}
		// A cancelled ctx ends the back-off at once (also when it was
		// cancelled before), and the retry never starts.
		if werr := wait.Sleep(ctx, in.UDPSetupBackoff); werr != nil {
			return m, fmt.Errorf("iperf3 run %s: cancelled in the %s back-off before UDP setup retry %d of %d: %w; the attempt failed at stream setup: %w",
				in.Profile.ID, in.UDPSetupBackoff, len(m.SetupRetries)+1, in.UDPSetupRetries, werr, err)
		}
		m.SetupRetries = append(m.SetupRetries, retry)
		m.Warnings = append(m.Warnings, fmt.Sprintf("UDP stream setup failed at %s (%s): ran again after the %s back-off (retry %d of %d, traffic.udp_setup_retries)",
			retry.At.Format(time.TimeOnly), retry.Reason, in.UDPSetupBackoff, len(m.SetupRetries), in.UDPSetupRetries))
		for i := range m.Processes {
			pr := &m.Processes[i]
			*pr = ProcessRun{Port: pr.Port, Streams: pr.Streams, ServerCmd: pr.ServerCmd, ClientCmd: pr.ClientCmd}
		}
	}
	results := make([]Result, len(m.Processes))
	for i, pr := range m.Processes {
		results[i] = pr.Result
	}
	m.Result = SumResults(results)
	if w := EndSpreadWarning(m.Processes, in.Duration); w != "" {
		m.Warnings = append(m.Warnings, w)
	}
	return m, nil
}

// afterRetries adds the earlier UDP setup failures to the error of the
// last attempt: all of them when the retries ran out at setup again.
func afterRetries(err error, retries []SetupRetry, setupAgain bool) error {
	if len(retries) == 0 {
		return err
	}
	reasons := make([]string, len(retries))
	for i, r := range retries {
		reasons[i] = fmt.Sprintf("attempt %d at %s: %s", i+1, r.At.Format(time.TimeOnly), r.Reason)
	}
	if setupAgain {
		return fmt.Errorf("UDP stream setup failed on all %d attempts (%d retries, traffic.udp_setup_retries): %s; attempt %d: %w",
			len(retries)+1, len(retries), strings.Join(reasons, "; "), len(retries)+1, err)
	}
	return fmt.Errorf("after %d UDP stream setup retries (%s): %w", len(retries), strings.Join(reasons, "; "), err)
}

// runAttempt runs the servers and clients of prs once, filling in their
// outputs, and stops every server it started before it returns. failed is
// the index of the process whose error failed the attempt (-1 when none or
// none in particular).
func runAttempt(ctx context.Context, in RunInput, prs []ProcessRun) (failed int, err error) {
	servers := make([]*server, 0, len(prs))
	clientsOK := false
	defer func() {
		// Stop every server started: give them ListenTimeout to finish on
		// their own after a complete test (-1 exits after one test and
		// writes its JSON), none after a failure or cancellation.
		grace := time.Duration(0)
		if clientsOK && ctx.Err() == nil {
			grace = in.ListenTimeout
		}
		stopServers(servers, grace)
		for i, s := range servers {
			prs[i].ServerJSON = s.res.Stdout
			prs[i].ServerStderr = s.res.Stderr
			prs[i].ServerExit = s.res.ExitCode
		}
		// A client that failed in setup because its server dropped a
		// stream is said so from the server's output, known only now.
		if err != nil && failed >= 0 && failed < len(prs) {
			if w := droppedWords(&prs[failed]); w != "" {
				err = fmt.Errorf("%w: %s", err, w)
				prs[failed].Error += ": " + w
			}
		}
	}()
	for _, pr := range prs {
		p, err := in.Server.Start(ctx, pr.ServerCmd)
		if err != nil {
			return -1, fmt.Errorf("%s: start %q: %w", in.Server.Name(), pr.ServerCmd, err)
		}
		servers = append(servers, newServer(p))
	}
	if err := waitListening(ctx, in, servers, prs); err != nil {
		return -1, err
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	most := 0
	for _, pr := range prs {
		most = max(most, pr.Streams)
	}
	bound, why := clientBound(in, most)
	if in.ClientsStarting != nil {
		in.ClientsStarting(time.Now())
	}
	errs := make([]error, len(prs))
	var wg sync.WaitGroup
	for i := range prs {
		wg.Add(1)
		go func(pr *ProcessRun, i int) {
			defer wg.Done()
			errs[i] = runClient(cctx, in, pr, clientOf{i + 1, len(prs)}, bound, why)
			// One failed process spoils the sum: stop the others now. Not
			// for one cut at its bound: every client started together with
			// that bound, so any still running is at its own and gets its
			// own look before its kill.
			var be *remote.BoundError
			if errs[i] != nil && !errors.As(errs[i], &be) {
				cancel()
			}
		}(&prs[i], i)
	}
	wg.Wait()
	if in.ClientsDone != nil {
		in.ClientsDone(time.Now())
	}
	if i := firstRealError(errs); i >= 0 {
		return i, joinRealErrors(errs, i)
	}
	clientsOK = true
	return -1, nil
}

// clientBound is the harness's own bound on a client of up to streams
// streams, and why. A client ends by itself after -t + -O counted from its
// test's start, which comes once its control connection and every stream
// are connected; past that plus the grace the servers get (the
// iperf_server interval) it is stuck on a dead peer. A TCP client also gets
// SetupAllowance for its connections: iperf3 connects them one after
// another, so every lost SYN delays its start. A UDP client can sit
// UDPSetupReplyWait in stream setup before it fails with its own error (the
// one a setup retry needs): when -t + -O + the grace would not even reach
// that wait, the bound is the wait plus the grace.
func clientBound(in RunInput, streams int) (time.Duration, string) {
	bound := in.Duration + in.Omit + in.ListenTimeout
	why := fmt.Sprintf("iperf3 -t %s + -O %s + the iperf_server interval %s", in.Duration, in.Omit, in.ListenTimeout)
	switch {
	case in.Profile.Protocol == TCP:
		bound += SetupAllowance(streams)
		// No parentheses: the why goes inside the BoundError's.
		why += fmt.Sprintf(" + the setup allowance of %d connections × TCP's initial retransmission timeout %s", streams+1, TCPInitialRTO)
	case in.Profile.Protocol == UDP && bound <= UDPSetupReplyWait:
		bound = UDPSetupReplyWait + in.ListenTimeout
		why = fmt.Sprintf("iperf3's UDP stream-setup wait %s (-t %s + -O %s + the iperf_server interval %s would not reach it) + the iperf_server interval",
			UDPSetupReplyWait, in.Duration, in.Omit, in.ListenTimeout)
	}
	return bound, why
}

// TCPInitialRTO is TCP's initial retransmission timeout (RFC 6298 2.1;
// Linux TCP_TIMEOUT_INIT): how long a connect waits before it sends a lost
// SYN again (then 2, 4, 8, 16 s more).
const TCPInitialRTO = time.Second

// SetupAllowance is the time a TCP client of streams streams may take to
// connect, beyond its test: each of its streams+1 connections (the control
// connection first) may lose one SYN and wait TCPInitialRTO for the second.
//
// iperf3 3.12 .. 3.21 connects its streams one after another, each a
// blocking connect() with no timeout of its own (iperf_create_streams,
// iperf_tcp_connect; --connect-timeout bounds the control connection only),
// and starts its -t and -O once the last one is up. So a path that drops
// SYNs delays the start by about 1 s per lost SYN, added up over the
// streams: measured on a 2-core machine with 8 clients of 125 streams and 20%
// of SYNs dropped, the clients took 21–55 s to connect (0.17–0.44 s per
// stream, e2e/iperf3/testdata/README.md), past the 30 s grace that was
// their whole allowance before (issue 32). A SYN lost again costs 2 s more;
// one stream whose SYNs are all lost is still cut at the bound, after
// the look that names it (LookCommand).
func SetupAllowance(streams int) time.Duration {
	return time.Duration(streams+1) * TCPInitialRTO
}

// joinRealErrors is errs[first], joined by every other error that did not
// come from the cancellation (more clients cut at their bound, each with
// its look).
func joinRealErrors(errs []error, first int) error {
	all := []error{errs[first]}
	for i, e := range errs {
		if i != first && e != nil && !errors.Is(e, context.Canceled) {
			all = append(all, e)
		}
	}
	if len(all) == 1 {
		return all[0]
	}
	return errors.Join(all...)
}

// firstRealError is the index of the error that caused a cancellation,
// preferred over the context errors of the clients it cancelled; -1 when
// every client succeeded.
func firstRealError(errs []error) int {
	first := -1
	for i, e := range errs {
		if e == nil {
			continue
		}
		if !errors.Is(e, context.Canceled) {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

func remoteVersion(ctx context.Context, r remote.Runner) (Version, error) {
	res, err := r.Run(ctx, "iperf3 --version")
	if err != nil {
		return Version{}, fmt.Errorf("%s: iperf3 --version: %w", r.Name(), err)
	}
	if err := res.Err(); err != nil {
		return Version{}, fmt.Errorf("iperf3 missing or broken: %w", err)
	}
	v, err := ParseVersion(string(res.Stdout))
	if err != nil {
		return Version{}, fmt.Errorf("%s: iperf3 --version: %w", r.Name(), err)
	}
	return v, nil
}

// clientOf is a client's place among a run's clients: client i of n.
type clientOf struct{ i, n int }

func (o clientOf) String() string { return fmt.Sprintf("iperf3 client %d of %d", o.i, o.n) }

func runClient(ctx context.Context, in RunInput, pr *ProcessRun, who clientOf, bound time.Duration, why string) error {
	c := in.Client
	// At its bound, before it is killed: one look at the client's guest.
	look := func(ctx context.Context) {
		r, err := c.Run(remote.WithBound(ctx, in.ListenTimeout, "the iperf_server interval (the look at a client at its bound)"), LookCommand)
		pr.ClientLook = r.Stdout
		if err != nil {
			pr.ClientLookError = err.Error()
		}
	}
	res, err := c.Run(remote.WithBoundLook(ctx, bound, why, look), pr.ClientCmd)
	pr.ClientEnded = time.Now().UTC()
	pr.ClientJSON, pr.ClientStderr, pr.ClientExit = res.Stdout, res.Stderr, res.ExitCode
	if err != nil {
		var be *remote.BoundError
		if errors.As(err, &be) {
			err = fmt.Errorf("%s (port %d) %s: %w", who, pr.Port, pr.lookWords(in.ServerAddr, be.Bound), err)
		} else {
			pr.ClientLook, pr.ClientLookError = nil, "" // it ended during the look: not at its bound
			err = fmt.Errorf("%s: port %d: %q: %w", c.Name(), pr.Port, pr.ClientCmd, err)
		}
		pr.Error = err.Error()
		return err
	}
	pr.ClientLook, pr.ClientLookError = nil, ""
	r, perr := Parse(res.Stdout)
	pr.Result = r
	switch {
	case perr != nil && res.ExitCode != 0:
		// iperf3's own message (JSON error field) explains more than the exit code.
		var ie *IperfError
		if errors.As(perr, &ie) {
			err = fmt.Errorf("%s: port %d: %w (exit %d)", c.Name(), pr.Port, perr, res.ExitCode)
		} else {
			err = fmt.Errorf("port %d: %w; output: %w", pr.Port, res.Err(), perr)
		}
	case perr != nil:
		// iperf3 3.12 exits 0 with an "error" field in -J mode (recorded:
		// testdata/v3.12-server-busy.json, -refused.json).
		err = fmt.Errorf("%s: port %d: %w", c.Name(), pr.Port, perr)
	case res.ExitCode != 0:
		err = fmt.Errorf("port %d: %w", pr.Port, res.Err())
	}
	if err != nil && (bytes.Contains(res.Stderr, []byte(tmpFullMessage)) || bytes.Contains(res.Stdout, []byte(tmpFullMessage))) {
		err = fmt.Errorf("%w (iperf3 keeps each stream's send buffer, -l bytes, in a file it creates in the guest's TMPDIR, /tmp, maps and fills from /dev/urandom: %q needs room there for one buffer per stream, and the read fails with EFAULT when /tmp, a tmpfs too small, has none left)", err, pr.ClientCmd)
	}
	if n, ok := StreamsConnected(res.Stdout); err != nil && ok {
		err = fmt.Errorf("%s (port %d) failed before its test began, %d of %d streams connected: %w", who, pr.Port, n, pr.Streams, err)
	}
	if err != nil && ControlAbortedInSetup(res.Stdout) {
		err = fmt.Errorf("%w; %s", err, controlAbortedWords(pr.ClientCmd))
	}
	if err != nil {
		pr.Error = err.Error()
	}
	return err
}

// controlAbortedWords say what a client's "unable to send control message"
// before its test began means (ControlAbortedInSetup), with the guard that
// ends such a connection when its client command set one.
func controlAbortedWords(clientCmd string) string {
	const hidden = "iperf3 3.12 reports its cleanup's failed IPERF_DONE, not the first error"
	f := strings.Fields(clientCmd)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--snd-timeout" {
			return fmt.Sprintf("its control connection was dead before the test began: the server had asked for the test's parameters and the client had sent them, and with --snd-timeout %s ms (TCP_USER_TIMEOUT) the client's kernel aborts the connection when what it sent stays unacknowledged that long: for %s ms the path lost the control connection's segments or the server's guest did not answer (%s)", f[i+1], f[i+1], hidden)
		}
	}
	return "its control connection was dead before the test began, after the server had asked for the test's parameters (" + hidden + ")"
}

// lookWords are the words of the look at the client at its bound, or why
// there are none.
func (pr *ProcessRun) lookWords(server string, after time.Duration) string {
	if pr.ClientLook == nil && pr.ClientLookError != "" {
		return fmt.Sprintf("at its bound of %s (the look at its guest failed: %s)", after, pr.ClientLookError)
	}
	w := ParseLook(pr.ClientLook).Words(server, pr.Port, pr.Streams, after)
	if pr.ClientLookError != "" {
		w += " (the look: " + pr.ClientLookError + ")"
	}
	return w
}

// tmpFullMessage is iperf3's error when a stream's buffer cannot be filled:
// iperf_new_stream (src/iperf_api.c) mkstemp()s a file in TMPDIR (or
// /tmp), ftruncate()s it to the block size, mmap()s it and reads
// /dev/urandom into it, and a full tmpfs turns that read into EFAULT (seen
// on the lab: 10000 streams of 128 KiB in a 512 MB /tmp).
const tmpFullMessage = "failed to read /dev/urandom: Bad address"

// server is a started iperf3 server and the result of its Wait.
type server struct {
	p    remote.Process
	done chan struct{}
	res  remote.Result
	err  error
}

func newServer(p remote.Process) *server {
	s := &server{p: p, done: make(chan struct{})}
	go func() {
		s.res, s.err = p.Wait()
		close(s.done)
	}()
	return s
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stopServers waits up to grace (shared) for the servers to exit on their
// own, then stops the rest and waits for all of them.
func stopServers(servers []*server, grace time.Duration) {
	if grace > 0 && len(servers) > 0 {
		deadline := time.NewTimer(grace)
		defer deadline.Stop()
		for _, s := range servers {
			select {
			case <-s.done:
				continue
			case <-deadline.C:
			}
			break
		}
	}
	for _, s := range servers {
		if !s.exited() {
			_, _ = s.p.Stop() // its result also arrives through Wait
		}
		<-s.done
	}
}

// waitListening polls the server guest until every port listens, a server
// exits early (port in use, bad address; that stops the poll at once),
// ListenTimeout passes (a look still running then is cut), or ctx ends.
func waitListening(ctx context.Context, in RunInput, servers []*server, prs []ProcessRun) error {
	iv := wait.Interval{Timeout: in.ListenTimeout, Poll: in.ListenPoll}
	err := wait.Poll(ctx, iv, in.Server.Name()+": iperf3 servers listening", func(ctx context.Context) (bool, error) {
		for i, s := range servers {
			if s.exited() {
				return false, wait.Stop(fmt.Errorf("%s: iperf3 server on port %d exited before the test (exit %d): %s%s",
					in.Server.Name(), prs[i].Port, s.res.ExitCode, serverMessage(s.res.Stdout), strings.TrimSpace(string(s.res.Stderr))))
			}
		}
		res, err := in.Server.Run(ctx, remote.ListenCommand("tcp"))
		switch {
		case err != nil:
			return false, err
		case res.ExitCode != 0:
			return false, res.Err()
		}
		if missing := missingPorts(res.Stdout, prs); len(missing) > 0 {
			return false, fmt.Errorf("not listening yet on port(s) %v", missing)
		}
		return true, nil
	})
	var pe *wait.PollError
	switch {
	case !errors.As(err, &pe):
		return err
	case pe.TimedOut:
		return fmt.Errorf("%s: iperf3 servers not listening after %s: %w", in.Server.Name(), in.ListenTimeout, pe.Last)
	default:
		return fmt.Errorf("%s: waiting for iperf3 servers: %w", in.Server.Name(), context.Cause(ctx))
	}
}

// missingPorts reads remote.ListenCommand's output and returns the ports
// of prs not listening.
func missingPorts(out []byte, prs []ProcessRun) []int {
	listening := remote.ListeningPorts(out)
	var missing []int
	for _, pr := range prs {
		if !listening[pr.Port] {
			missing = append(missing, pr.Port)
		}
	}
	return missing
}

// serverMessage extracts iperf3's error from a server's -J output, if any.
func serverMessage(stdout []byte) string {
	_, err := Parse(stdout)
	var ie *IperfError
	if errors.As(err, &ie) {
		return ie.Message + " "
	}
	return ""
}
