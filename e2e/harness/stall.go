package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// A failed measured window is explained, not just reported: once the window
// is over (never during it: nothing may poll guests or hypervisors while
// measured traffic runs), the harness looks once at what changed — each
// server's status and host, each guest port's status and binding, each
// guest's management path, and whether ovs-vswitchd answers on each of the
// pair's hypervisors the run has a runner for (stall_ovs.go) — and
// reads from the client's own JSON when the data stopped. Only what is
// abnormal goes into the failure; when nothing is, the failure says what
// was looked at.

// errGone is what a witness returns for a resource the cloud answers 404 for.
var errGone = errors.New("no longer exists")

// witness answers the look after a window. Pair.witness (nil = the
// run's cloud clients and a TCP connect, see cloudWitness) is a fake in
// the tests.
type witness interface {
	// Server and Port return errGone (wrapped or not) for a 404.
	Server(ctx context.Context, id string) (fixtures.ServerState, error)
	Port(ctx context.Context, id string) (fixtures.PortState, error)
	// Answers tells whether guest i (index in Topology.Servers) accepts a
	// connection on addr, its management (SSH) address.
	Answers(ctx context.Context, i int, addr string) error
}

// guestSSHPort is the port Connect dials on every guest (its endpoints
// leave the port at 0, i.e. 22).
const guestSSHPort = 22

// guestLook is what the look found about one guest: its server, its ports
// and its management path. Errors other than errGone mean the look-up
// itself failed.
type guestLook struct {
	srv     fixtures.Server
	now     fixtures.ServerState
	srvErr  error
	ports   []portLook
	addr    string // management address tried; "" = not tried
	reach   error
	reached bool
}

// hvLook is what the look found about one hypervisor's ovs-vswitchd; err
// means the look-up itself failed (the runner, the prefix, the parse).
type hvLook struct {
	name string
	v    offload.Vswitchd
	err  error
}

type portLook struct {
	role, name, id string // role: "data" or "management"
	now            fixtures.PortState
	err            error
}

// look is everything the look found, for explainLook.
type look struct {
	hvs    []hvLook
	guests []guestLook
	// bound is the look's bound (intervals.command) and cut whether it
	// passed before every answer came.
	bound time.Duration
	cut   bool
	// stop is the finding from the client's JSON ("" = none).
	stop string
}

// explainLook turns a look into the sentence that follows "after the
// window:": the abnormal findings, then what could not be read, then the
// iperf3 client's stop time. damage lists the findings that say the
// topology itself is no longer what the run built (a port gone, DOWN or
// unbound, a server not ACTIVE or moved, a guest not answering, a
// hypervisor's ovs-vswitchd not answering): later windows cannot succeed.
// A hypervisor's finding comes first: it names the cause of the guests'.
func explainLook(l look) (why string, damage []string) {
	f := findings{cut: l.cut}
	for _, h := range l.hvs {
		f.vswitchd(h)
	}
	for _, g := range l.guests {
		f.server(g)
		for _, p := range g.ports {
			f.port(g, p)
		}
		f.reach(g)
	}
	if l.cut {
		cut := fmt.Sprintf("the look stopped at its bound (intervals.command, %s)", l.bound)
		if len(f.unanswered) > 0 {
			cut += " with no answer about " + strings.Join(f.unanswered, ", ")
		}
		f.failed = append(f.failed, cut)
	}
	parts := f.found
	if len(f.found) == 0 {
		parts = []string{f.nothingAbnormal(len(l.guests))}
	}
	parts = append(parts, f.failed...)
	if l.stop != "" {
		parts = append(parts, l.stop)
	}
	return strings.Join(parts, "; "), f.found
}

// findings collects what explainLook says: found (abnormal), failed (look-
// ups that answered with an error), unanswered (no answer before the bound).
type findings struct {
	cut                       bool
	found, failed, unanswered []string
	bindingsHidden            bool
	reachTried                int
}

// read sorts the outcome of one look-up and reports whether there is an
// answer to judge: a 404 is a finding ("no longer exists"), an error a
// look-up that failed, no answer before the bound one that did not finish.
func (f *findings) read(what string, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, errGone):
		f.found = append(f.found, what+" no longer exists")
	case f.cut && errors.Is(err, context.DeadlineExceeded):
		f.unanswered = append(f.unanswered, what)
	default:
		f.failed = append(f.failed, fmt.Sprintf("could not read %s: %v", what, err))
	}
	return false
}

func (f *findings) vswitchd(h hvLook) {
	if !f.read("ovs-vswitchd on hypervisor "+h.name, h.err) {
		return
	}
	if why := h.v.Finding(); why != "" {
		f.found = append(f.found, fmt.Sprintf("hypervisor %s: %s", h.name, why))
	}
}

func (f *findings) server(g guestLook) {
	name := fmt.Sprintf("server %s (%s)", g.srv.Name, g.srv.ID)
	if !f.read(name, g.srvErr) {
		return
	}
	if g.now.Status != "ACTIVE" {
		what := fmt.Sprintf("%s is %s", name, g.now.Status)
		if g.now.Fault != "" {
			what += ": " + g.now.Fault
		}
		if g.now.Cause != "" {
			what += "; " + g.now.Cause
		}
		f.found = append(f.found, what)
	}
	if from, to := moved(g.srv, g.now); from != "" {
		f.found = append(f.found, fmt.Sprintf("%s moved from %s to %s", name, from, to))
	}
}

func (f *findings) port(g guestLook, p portLook) {
	name := fmt.Sprintf("%s port %s (%s)", p.role, p.name, p.id)
	if !f.read(name, p.err) {
		return
	}
	if p.now.Status != "ACTIVE" {
		f.found = append(f.found, fmt.Sprintf("%s is %s", name, p.now.Status))
	}
	if !p.now.Binding {
		f.bindingsHidden = true
		return
	}
	switch {
	case p.now.HostID == "" || p.now.VIFType == "unbound" || p.now.VIFType == "binding_failed":
		f.found = append(f.found, fmt.Sprintf("%s is unbound (binding:vif_type %q, binding:host_id %q)", name, p.now.VIFType, p.now.HostID))
	case g.srvErr == nil && g.now.Host != "" && p.now.HostID != g.now.Host:
		f.found = append(f.found, fmt.Sprintf("%s is bound to %s, not to its server's host %s", name, p.now.HostID, g.now.Host))
	}
}

func (f *findings) reach(g guestLook) {
	if g.addr == "" {
		return
	}
	f.reachTried++
	switch {
	case g.reached:
	case f.cut && errors.Is(g.reach, context.DeadlineExceeded):
		f.unanswered = append(f.unanswered, fmt.Sprintf("guest %s on %s", g.srv.Name, g.addr))
	default:
		f.found = append(f.found, fmt.Sprintf("guest %s does not answer on its management address %s: %v", g.srv.Name, g.addr, g.reach))
	}
}

// nothingAbnormal says what was looked at when nothing abnormal was found.
func (f *findings) nothingAbnormal(guests int) string {
	if len(f.failed) > 0 {
		return "nothing abnormal in what could be read"
	}
	what := "servers ACTIVE on their hosts, ports ACTIVE and bound"
	if f.bindingsHidden {
		what = "servers ACTIVE on their hosts, ports ACTIVE (bindings not visible without cloud.admin)"
	}
	switch f.reachTried {
	case 0:
		return what + ", guests' management path not tried (no address)"
	case guests:
		return what + ", both guests answer SSH"
	}
	return what + ", the guests tried answer SSH"
}

// moved compares where the server runs now with the topology: by
// hypervisor name (admin) or by hostId (tenant).
func moved(was fixtures.Server, now fixtures.ServerState) (from, to string) {
	switch {
	case was.Hypervisor != "" && now.Hypervisor != "":
		if was.Hypervisor != now.Hypervisor {
			return was.Hypervisor, now.Hypervisor
		}
	case was.HostID != "" && now.HostID != "" && was.HostID != now.HostID:
		return "host " + shortID(was.HostID), "host " + shortID(now.HostID)
	}
	return "", ""
}

// afterWindow is the look after a failed window: every question at once,
// the whole look bounded by intervals.command. It returns the explanation
// (also logged on its own line, "after the window: …"). On a damaged
// topology it remembers why, so later windows are not started against it
// (see notRunOnDamage). It does not look when ctx is over (an interrupted
// run has no use for it).
func (pair *Pair) afterWindow(ctx context.Context, what, after string, m iperf3.Measurement) string {
	if ctx.Err() != nil || pair.Topology == nil {
		return ""
	}
	bound := pair.run.Config.Interval(config.IntervalCommand).Timeout
	lctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	w := pair.witness
	if w == nil {
		w = pair.cloudWitness()
	}
	l := look{bound: bound, guests: make([]guestLook, len(pair.Topology.Servers)), hvs: pair.lookHypervisors()}
	var wg sync.WaitGroup
	for i := range l.hvs {
		h := &l.hvs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.v, h.err = askVswitchd(lctx, pair.run.Hypervisors[h.name], bound)
		}()
	}
	for i, srv := range pair.Topology.Servers {
		g := &l.guests[i]
		g.srv = srv
		for _, p := range []struct{ role, id, suffix string }{{"data", srv.DataPortID, "data"}, {"management", srv.ManagementPortID, "mgmt"}} {
			if p.id != "" {
				g.ports = append(g.ports, portLook{role: p.role, id: p.id, name: pair.portName(p.id, i, p.suffix)})
			}
		}
		if a := srv.AccessIP(); a != "" {
			g.addr = net.JoinHostPort(a, strconv.Itoa(guestSSHPort))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.now, g.srvErr = w.Server(lctx, srv.ID)
		}()
		for j := range g.ports {
			wg.Add(1)
			go func(p *portLook) {
				defer wg.Done()
				p.now, p.err = w.Port(lctx, p.id)
			}(&g.ports[j])
		}
		if g.addr != "" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.reach = w.Answers(lctx, i, g.addr)
				g.reached = g.reach == nil
			}()
		}
	}
	wg.Wait()
	l.cut = errors.Is(lctx.Err(), context.DeadlineExceeded)
	if len(pair.Topology.Servers) > 1 {
		l.stop = iperf3.DescribeDataStop(pair.Topology.Servers[1].Name, m)
	}
	why, damage := explainLook(l)
	pair.Logf("%s: %s", after, why)
	if len(damage) > 0 && pair.damage == "" {
		pair.damage = fmt.Sprintf("%s (%s)", what, strings.Join(damage, "; "))
	}
	return why
}

// lookHypervisors are the pair's hypervisors the look asks about, in the
// servers' order, once each: those the run has a runner for (with no
// hypervisor access configured, none).
func (pair *Pair) lookHypervisors() []hvLook {
	var hvs []hvLook
	for _, srv := range pair.Topology.Servers {
		if srv.Hypervisor == "" || pair.run.Hypervisors[srv.Hypervisor] == nil ||
			slices.ContainsFunc(hvs, func(h hvLook) bool { return h.name == srv.Hypervisor }) {
			continue
		}
		hvs = append(hvs, hvLook{name: srv.Hypervisor})
	}
	return hvs
}

// askVswitchd runs offload.VswitchdCommand on a hypervisor (through its
// runner: hypervisors.ovs_command_prefix, or its OVS pod) and reads its
// answer (offload.ReadVswitchd).
func askVswitchd(ctx context.Context, r remote.Runner, bound time.Duration) (offload.Vswitchd, error) {
	res, err := r.Run(ctx, offload.VswitchdCommand(offload.AppctlSecs(bound)))
	if err != nil {
		return offload.Vswitchd{}, err
	}
	return offload.ReadVswitchd(res)
}

// portName is a port's name as the run created it (Topology.Resources), or
// the name the run gives that role's port when the list lacks it.
func (pair *Pair) portName(id string, i int, suffix string) string {
	for _, r := range pair.Topology.Resources {
		if r.Kind == fixtures.KindPort && r.ID == id {
			return r.Name
		}
	}
	return fixtures.ResourceName(pair.Topology.Prefix, pair.Topology.RunID, fmt.Sprintf("vm%d-%s", i, suffix))
}

// explainFailure adds to a failed window's error what the look found
// ("<err>; after the window: <findings>"); what names the window ("tcp-p1
// repeat 1"). The original error stays first and in the chain.
func (pair *Pair) explainFailure(ctx context.Context, what string, m iperf3.Measurement, err error) error {
	return pair.explain(ctx, what, "after the window", m, err)
}

// explainWait is explainFailure for a failed wait that carried no traffic
// (the SSH wait): a guest that never answers may be a server that died.
func (pair *Pair) explainWait(ctx context.Context, what string, err error) error {
	return pair.explain(ctx, what, "after the wait", iperf3.Measurement{}, err)
}

func (pair *Pair) explain(ctx context.Context, what, after string, m iperf3.Measurement, err error) error {
	if why := pair.afterWindow(ctx, what, after, m); why != "" {
		return fmt.Errorf("%w; %s: %s", err, after, why)
	}
	return err
}

// notRunOnDamage refuses a window on a topology an earlier look found
// damaged: it cannot succeed, and each attempt would only wait for its
// bounds. The refusal is logged and kept in the results' errors, so the
// report lists what was not run and why.
func (pair *Pair) notRunOnDamage(what string) error {
	if pair.damage == "" {
		return nil
	}
	err := fmt.Errorf("%s: not run: the topology was damaged during %s", what, pair.damage)
	pair.Logf("%v", err)
	if uerr := pair.Results.Update(func(r *results.Results) { r.Errors = append(r.Errors, err.Error()) }); uerr != nil {
		return errors.Join(err, uerr)
	}
	return err
}
