package sockperf

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// PingPackage is the Debian/Ubuntu package of the ping the first-packet
// profile runs.
const PingPackage = "iputils-ping"

// PingInterval is the gap between the echoes of one flow (ping -i): 0.2 s
// is the shortest iputils allows an unprivileged user.
const PingInterval = 200 * time.Millisecond

// PingReplyWait is how long ping waits for the last reply (ping -W, seconds).
const PingReplyWait = time.Second

// FirstInput is the first-packet profile: Flows times, after IdleGap with
// no traffic between the pair, Client pings ServerAddr Pings times.
//
// Why an idle gap and not only a new 5-tuple: OVS (software or offloaded)
// caches megaflows whose match is only what its OpenFlow tables looked at.
// With port security off, Neutron's br-int/br-tun tables switch on MACs,
// VLAN and tunnel, so a new UDP source port usually hits the megaflow the
// previous flow installed and never takes the miss path. Every datapath
// flow of the pair is gone once it has been idle longer than OVS's
// other_config:max-idle (10 s by default; the revalidators then delete it,
// and the TC/NIC rule with it), so after the gap the first echo request and
// its reply take the upcall path on both hypervisors: the cost ASAP² pays
// once per flow. IdleGap must exceed the cloud's max-idle (config
// latency.first_packet_idle, default 12 s).
type FirstInput struct {
	Client     remote.Runner
	ServerAddr string
	Flows      int
	Pings      int // echoes per flow, >= 2 (the first is the miss, the rest the steady state)
	IdleGap    time.Duration
	Grace      time.Duration // added to each ping's own length to bound it
	// FlowStarting, when set, is called as each flow's ping is launched.
	FlowStarting func(flow int, at time.Time)
}

// FirstFlow is one fresh flow.
type FirstFlow struct {
	Started time.Time `json:"started"`
	// FirstUs is the round trip of the first echo; nil when it got no reply.
	FirstUs  *float64  `json:"first_us,omitempty"`
	SteadyUs []float64 `json:"steady_us"`
	Output   []byte    `json:"-"`
}

// FirstMeasurement is the first-packet profile's outcome.
type FirstMeasurement struct {
	Cmd   string      `json:"cmd"`
	Flows []FirstFlow `json:"flows"`
	// FirstMedianUs and FirstMaxUs are over the flows whose first echo was
	// answered; SteadyP50Us is the median of every later echo of every flow.
	FirstMedianUs float64 `json:"first_median_us"`
	FirstMaxUs    float64 `json:"first_max_us"`
	SteadyP50Us   float64 `json:"steady_p50_us"`
	// FirstLost counts flows whose first echo got no reply.
	FirstLost int `json:"first_lost"`
}

// PingCommand is one flow: n echoes PingInterval apart, numeric, each
// reply awaited at most PingReplyWait after the last echo.
func PingCommand(addr string, n int) string {
	return fmt.Sprintf("ping -n -c %d -i %.1f -W %d %s", n, PingInterval.Seconds(), int(PingReplyWait/time.Second), addr)
}

var pingVersionRE = regexp.MustCompile(`(iputils[^\s]*\s*\S+|ping utility, iputils-\S+)`)

func parsePingVersion(b []byte) (string, error) {
	m := pingVersionRE.Find(b)
	if m == nil {
		return "", fmt.Errorf("no iputils version in %q", string(b))
	}
	return string(m), nil
}

// FirstPacket runs the first-packet profile. Nothing else runs on the
// guests during a flow: the idle gaps are plain waits on the harness's
// clock. The measurement holds every flow done, also on error.
func FirstPacket(ctx context.Context, in FirstInput) (FirstMeasurement, error) {
	m := FirstMeasurement{Cmd: PingCommand(in.ServerAddr, in.Pings)}
	var errs []error
	if in.Client == nil {
		errs = append(errs, errors.New("client runner is required"))
	}
	if !remote.ValidAddress(in.ServerAddr) {
		errs = append(errs, fmt.Errorf("server address: not an IP address or host name, got %q", in.ServerAddr))
	}
	if in.Flows < 1 || in.Pings < 2 {
		errs = append(errs, fmt.Errorf("flows must be >= 1 and pings >= 2, got %d and %d", in.Flows, in.Pings))
	}
	if in.IdleGap <= 0 || in.Grace <= 0 {
		errs = append(errs, fmt.Errorf("idle gap and grace must be > 0, got %s and %s", in.IdleGap, in.Grace))
	}
	if err := errors.Join(errs...); err != nil {
		return m, fmt.Errorf("first-packet latency: %w", err)
	}
	if _, err := toolVersion(ctx, in.Client, "ping -V", PingPackage, parsePingVersion); err != nil {
		return m, err
	}
	bound := time.Duration(in.Pings-1)*PingInterval + PingReplyWait + in.Grace
	why := fmt.Sprintf("%d echoes %s apart + ping -W %s + latency.grace %s", in.Pings, PingInterval, PingReplyWait, in.Grace)
	for i := range in.Flows {
		if err := wait.Sleep(ctx, in.IdleGap); err != nil {
			return m, fmt.Errorf("first-packet latency: cancelled in the idle gap before flow %d of %d: %w", i+1, in.Flows, err)
		}
		f := FirstFlow{Started: time.Now()}
		if in.FlowStarting != nil {
			in.FlowStarting(i+1, f.Started)
		}
		res, err := in.Client.Run(remote.WithBound(ctx, bound, why), m.Cmd)
		f.Output = append(append([]byte(nil), res.Stdout...), res.Stderr...)
		if err != nil {
			m.Flows = append(m.Flows, f)
			return m, fmt.Errorf("%s: flow %d of %d: %q: %w", in.Client.Name(), i+1, in.Flows, m.Cmd, err)
		}
		// iputils exits 1 when no reply came at all, 2 on other errors.
		if res.ExitCode > 1 {
			m.Flows = append(m.Flows, f)
			return m, fmt.Errorf("flow %d of %d: %w", i+1, in.Flows, res.Err())
		}
		pr, perr := ParsePing(res.Stdout)
		if perr != nil {
			m.Flows = append(m.Flows, f)
			return m, fmt.Errorf("%s: flow %d of %d: %w", in.Client.Name(), i+1, in.Flows, perr)
		}
		if v, ok := pr.First(); ok {
			f.FirstUs = &v
		}
		f.SteadyUs = pr.Steady()
		m.Flows = append(m.Flows, f)
	}
	m.summarize()
	if len(m.Flows)-m.FirstLost == 0 {
		return m, fmt.Errorf("%s: first-packet latency: no flow's first echo was answered (%d flows)", in.Client.Name(), len(m.Flows))
	}
	return m, nil
}

func (m *FirstMeasurement) summarize() {
	var firsts, steady []float64
	m.FirstLost = 0
	for _, f := range m.Flows {
		if f.FirstUs == nil {
			m.FirstLost++
		} else {
			firsts = append(firsts, *f.FirstUs)
		}
		steady = append(steady, f.SteadyUs...)
	}
	m.FirstMedianUs, m.SteadyP50Us = Median(firsts), Median(steady)
	if len(firsts) > 0 {
		m.FirstMaxUs = slices.Max(firsts)
	}
}
