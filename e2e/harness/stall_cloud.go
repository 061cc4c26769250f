package harness

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// cloudWitness is the look's real witness: the fixtures' reads with the
// clients the topology was provisioned with (Run.fixtureClients; the
// admin ones when the config has them: host names and port bindings are
// admin-only) and a TCP connect to each guest's SSH address —
// through the guest's SSH connection when guests sit behind a jump host,
// since the harness cannot dial their management addresses itself.
type cloudWitness struct {
	clients *fixtures.Clients
	dial    func(ctx context.Context, i int, addr string) error
}

func (pair *Pair) cloudWitness() *cloudWitness {
	w := &cloudWitness{}
	if pair.Topology != nil && pair.run.Clients != nil {
		c := pair.run.fixtureClients()
		w.clients = &c
	}
	timeout := remote.DefaultConnectTimeout
	if pair.run.dialer != nil && pair.run.dialer.ConnectTimeout > 0 {
		timeout = pair.run.dialer.ConnectTimeout
	}
	jump := pair.run.Config.GuestAccess.Mode == config.AccessJump
	w.dial = func(ctx context.Context, i int, addr string) error {
		if jump {
			if i >= len(pair.Guests) || pair.Guests[i] == nil {
				return errors.New("no SSH connection to it through the jump host")
			}
			res, err := pair.Guests[i].Run(remote.WithBound(ctx, timeout, "the look after a window: one connect"), "true")
			if err == nil {
				err = res.Err()
			}
			return err
		}
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return w
}

func gone(err error) error {
	if fixtures.IsNotFound(err) {
		return fmt.Errorf("%w (404)", errGone)
	}
	return err
}

func (w *cloudWitness) Server(ctx context.Context, id string) (fixtures.ServerState, error) {
	if w.clients == nil {
		return fixtures.ServerState{}, errors.New("no compute client")
	}
	srv, err := w.clients.ServerState(ctx, id)
	if err != nil {
		return fixtures.ServerState{}, gone(err)
	}
	return srv, nil
}

func (w *cloudWitness) Port(ctx context.Context, id string) (fixtures.PortState, error) {
	if w.clients == nil {
		return fixtures.PortState{}, errors.New("no network client")
	}
	p, err := w.clients.PortState(ctx, id)
	if err != nil {
		return fixtures.PortState{}, gone(err)
	}
	return p, nil
}

func (w *cloudWitness) Answers(ctx context.Context, i int, addr string) error {
	return w.dial(ctx, i, addr)
}
