package offload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
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
}

// FindRepresentor returns the OVS interface whose iface-id is portID.
func FindRepresentor(ctx context.Context, hv remote.Runner, portID string) (string, EvidenceFile, error) {
	cmd := FindInterfaceCommand(portID)
	r, err := hv.Run(ctx, cmd)
	if err != nil {
		return "", EvidenceFile{}, fmt.Errorf("find representor of port %s on %s: %w", portID, hv.Name(), err)
	}
	ev := evidence("ovs-vsctl-find-iface-"+fileSafe(portID)+".txt", r)
	if err := r.Err(); err != nil {
		return "", ev, fmt.Errorf("find representor of port %s: %w", portID, err)
	}
	names, err := ParseInterfaceNames(r.Stdout)
	if err != nil {
		return "", ev, fmt.Errorf("find representor of port %s on %s: %w", portID, hv.Name(), err)
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
	return fmt.Sprintf("timeout -s INT %ss tcpdump -nn -e -tt -l -i %s -c %d %s", secs, shellQuote(rep), maxPackets, shellQuote(filter))
}

// CheckRepresentor captures on the guest's representor during a sustained
// flow and judges it with JudgeCapture. Start it while the flow runs. A
// failed lookup or capture is an inconclusive verdict; err is for bad input,
// transport failure or a cancelled context.
//
// An empty capture only means "offloaded" if the flow really ran: confirm it
// with ConfirmFlow once the flow's own result is known.
func CheckRepresentor(ctx context.Context, hv remote.Runner, in RepresentorInput) (Check, error) {
	c := Check{Name: CheckNameRepresentor}
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
	}
	rep := in.Representor
	if rep == "" {
		name, ev, err := FindRepresentor(ctx, hv, in.PortID)
		c.Evidence = append(c.Evidence, ev)
		if err != nil {
			if ev.Cmd == "" { // transport failure or cancelled: no command result
				return c, err
			}
			c.Verdict, c.Reason = Inconclusive, err.Error()
			return c, nil
		}
		rep = name
	}
	r, err := hv.Run(ctx, CaptureCommand(rep, filter, in.Window, in.MaxPackets))
	if err != nil {
		return c, fmt.Errorf("representor check on %s: %w", hv.Name(), err)
	}
	c.Evidence = append(c.Evidence, evidence("tcpdump-"+fileSafe(rep)+".txt", r))
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
		c.Verdict, c.Reason = Inconclusive, fmt.Sprintf("capture on %s exited %d: %s", rep, r.ExitCode, msg)
		return c, nil
	}
	out := append(append([]byte{}, r.Stdout...), r.Stderr...)
	capt, perr := ParseTcpdump(out)
	if perr != nil {
		c.Verdict, c.Reason = Inconclusive, fmt.Sprintf("capture on %s: %v", rep, perr)
		return c, nil
	}
	v, why, _ := JudgeCapture(capt, []string{in.LocalMAC, in.PeerMAC}, in.FirstPackets, window)
	c.Verdict, c.Reason = v, "representor "+rep+": "+why
	return c, nil
}
