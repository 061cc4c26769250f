package offload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// RepresentorInput configures CheckRepresentor.
type RepresentorInput struct {
	// PortID is the guest's Neutron port id; the representor is the OVS
	// interface with external_ids:iface-id=PortID. Representor, when set,
	// skips that lookup.
	PortID      string
	Representor string
	// LocalMAC is the guest behind this representor, PeerMAC the other guest.
	LocalMAC, PeerMAC string
	// Protocol of the sustained flow: "tcp", "udp", "icmp" or "" for any IP.
	Protocol string
	// Window is how long to capture (tcpdump runs under `timeout -s INT`).
	Window time.Duration
	// FirstPackets is how many packets of the flow may reach the representor
	// before offload takes over.
	FirstPackets int
	// MaxPackets bounds the capture (tcpdump -c); must exceed FirstPackets.
	MaxPackets int
	// Control is the guest behind the representor and ControlIface its data
	// interface (the port the representor stands for); both are required.
	// The same capture runs there in the same window as the positive
	// control: a quiet representor proves offload only while the guest's
	// own interface shows the flow.
	Control      remote.Runner
	ControlIface string
	// ControlSudo runs the control capture under `sudo -n` (a guest's login
	// user is rarely root; -n fails at once instead of asking a password).
	ControlSudo bool
}

// FindRepresentor returns the OVS interface whose iface-id is portID.
func FindRepresentor(ctx context.Context, hv remote.Runner, portID string) (string, EvidenceFile, error) {
	cmd := FindInterfaceCommand(portID)
	r, err := hv.Run(ctx, cmd)
	if err != nil {
		return "", EvidenceFile{}, onTarget("find representor of port "+portID, hv, err)
	}
	ev := evidence("ovs-vsctl-find-iface-"+fileSafe(portID)+".txt", r)
	if err := r.Err(); err != nil {
		return "", ev, fmt.Errorf("find representor of port %s: %w", portID, err)
	}
	names, err := ParseInterfaceNames(r.Stdout)
	if err != nil {
		return "", ev, onTarget("find representor of port "+portID, hv, err)
	}
	switch len(names) {
	case 0:
		return "", ev, fmt.Errorf("find representor of port %s: no OVS interface on %s has external_ids:iface-id=%s", portID, hv.Name(), portID)
	case 1:
		return names[0], ev, nil
	}
	return "", ev, fmt.Errorf("find representor of port %s: %d OVS interfaces on %s have that iface-id: %s", portID, len(names), hv.Name(), strings.Join(names, ", "))
}

// CaptureCommand is the capture CheckRepresentor runs.
func CaptureCommand(rep, filter string, window time.Duration, maxPackets int) string {
	secs := strconv.FormatFloat(window.Seconds(), 'f', -1, 64)
	return fmt.Sprintf("timeout -s INT %ss tcpdump -nn -e -tt -l -i %s -c %d %s", secs, remote.ShellQuote(rep), maxPackets, remote.ShellQuote(filter))
}

// ControlCaptureCommand is the control capture CheckRepresentor runs in the
// guest: CaptureCommand on its interface, under `sudo -n` when sudo is set.
func ControlCaptureCommand(iface, filter string, window time.Duration, maxPackets int, sudo bool) string {
	cmd := CaptureCommand(iface, filter, window, maxPackets)
	if sudo {
		cmd = "sudo -n " + cmd
	}
	return cmd
}

// CheckRepresentor captures on the guest's representor during a sustained
// flow and, in the same window and with the same filter and bound, on the
// guest's own data interface (the positive control), and judges both with
// JudgeCaptureWithControl. Start it while the flow runs. A failed lookup or
// capture is an inconclusive verdict; err is for bad input, transport
// failure or a cancelled context. ConfirmFlow still applies once the flow's
// own result is known.
func CheckRepresentor(ctx context.Context, hv remote.Runner, in RepresentorInput) (Check, error) {
	c := Check{Name: results.CheckRepresentor}
	filter, err := CaptureFilter(in.LocalMAC, in.PeerMAC, in.Protocol)
	if err != nil {
		return c, fmt.Errorf("representor check: %w", err)
	}
	switch {
	case in.Window <= 0:
		return c, fmt.Errorf("representor check: capture window must be > 0, got %s", in.Window)
	case in.FirstPackets < 0:
		return c, fmt.Errorf("representor check: first packets must be >= 0, got %d", in.FirstPackets)
	case in.MaxPackets <= in.FirstPackets:
		return c, fmt.Errorf("representor check: max packets (%d) must exceed first packets (%d)", in.MaxPackets, in.FirstPackets)
	case in.PortID == "" && in.Representor == "":
		return c, errors.New("representor check: neither port id nor representor given")
	case in.Control == nil:
		return c, errors.New("representor check: no control runner (the guest behind the representor): without the same capture on the guest's own interface, a quiet representor proves nothing")
	case strings.TrimSpace(in.ControlIface) == "":
		return c, fmt.Errorf("representor check: no control interface (the data interface of the guest %s) given", in.Control.Name())
	}
	rep := in.Representor
	if rep == "" {
		name, ev, err := FindRepresentor(ctx, hv, in.PortID)
		c.Evidence = append(c.Evidence, ev)
		if err != nil {
			if ev.Cmd == "" { // transport failure or cancelled: no command result
				return c, err
			}
			c.Verdict, c.Reason = results.VerdictInconclusive, err.Error()
			return c, nil
		}
		rep = name
	}
	r, ctlRes, err := captureBoth(ctx, hv, in.Control,
		CaptureCommand(rep, filter, in.Window, in.MaxPackets),
		ControlCaptureCommand(in.ControlIface, filter, in.Window, in.MaxPackets, in.ControlSudo))
	if err != nil {
		return c, fmt.Errorf("representor check: %w", err)
	}
	c.Evidence = append(c.Evidence,
		evidence("tcpdump-"+fileSafe(rep)+".txt", r),
		evidence("tcpdump-control-"+fileSafe(in.ControlIface)+".txt", ctlRes))
	ctl := controlCapture(ctlRes, in.Control.Name(), in.ControlIface, in.ControlSudo)
	window := in.Window
	switch r.ExitCode {
	case 124: // the window ended: tcpdump got SIGINT and printed its summary
	case 0: // MaxPackets reached before the window ended: rate from timestamps
		window = 0
	default:
		msg := firstLine(r.Stderr)
		if r.ExitCode == 127 {
			msg = "tcpdump or timeout is not installed on the hypervisor: " + msg
		}
		c.Verdict, c.Reason = results.VerdictInconclusive, fmt.Sprintf("capture on %s exited %d: %s", rep, r.ExitCode, msg)
		return c, nil
	}
	out := append(append([]byte{}, r.Stdout...), r.Stderr...)
	capt, perr := ParseTcpdump(out)
	if perr != nil {
		c.Verdict, c.Reason = results.VerdictInconclusive, fmt.Sprintf("capture on %s: %v", rep, perr)
		return c, nil
	}
	v, why, _ := JudgeCaptureWithControl(capt, ctl, []string{in.LocalMAC, in.PeerMAC}, in.FirstPackets, window)
	c.Verdict, c.Reason = v, "representor "+rep+": "+why
	return c, nil
}

// captureBoth runs the representor capture on hv and the control capture
// on guest at the same time, so both cover the same window. A transport
// failure of either cancels the other and is returned.
func captureBoth(ctx context.Context, hv, guest remote.Runner, repCmd, ctlCmd string) (rep, ctl remote.Result, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	run := func(r remote.Runner, cmd string, dst *remote.Result) {
		defer wg.Done()
		res, err := r.Run(ctx, cmd)
		*dst = res
		if err != nil {
			once.Do(func() { firstErr = onTarget("", r, err) })
			cancel()
		}
	}
	wg.Add(2)
	go run(hv, repCmd, &rep)
	go run(guest, ctlCmd, &ctl)
	wg.Wait()
	return rep, ctl, firstErr
}

// controlCapture reads the control capture's result.
func controlCapture(r remote.Result, guest, iface string, sudo bool) ControlCapture {
	ctl := ControlCapture{Guest: guest, Iface: iface}
	msg := firstLine(r.Stderr)
	switch r.ExitCode {
	case 0, 124: // bound reached, or the window ended
	case 127:
		tool := "tcpdump"
		switch {
		case strings.Contains(msg, "tcpdump"):
		case sudo && strings.Contains(msg, "sudo"):
			tool = "sudo"
		case strings.Contains(msg, "timeout"):
			tool = "timeout"
		}
		ctl.Problem = fmt.Sprintf("%s is not installed in the guest %s (exit 127: %s)", tool, guest, msg)
		return ctl
	default:
		if sudo && strings.HasPrefix(msg, "sudo:") {
			ctl.Problem = fmt.Sprintf("`sudo -n` in the guest %s refused (exit %d: %s)", guest, r.ExitCode, msg)
		} else {
			ctl.Problem = fmt.Sprintf("exit %d: %s", r.ExitCode, msg)
		}
		return ctl
	}
	capt, err := ParseTcpdump(append(append([]byte{}, r.Stdout...), r.Stderr...))
	if err != nil {
		ctl.Problem = err.Error()
		return ctl
	}
	ctl.Capture = &capt
	return ctl
}
