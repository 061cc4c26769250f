package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// cloudWitness is the look's real witness: the gophercloud clients the
// topology was provisioned with (Session.fixtureClients; the admin ones when
// the config has them: host names and port bindings are admin-only) and a
// TCP connect to each guest's SSH address —
// through the guest's SSH connection when guests sit behind a jump host,
// since the harness cannot dial their management addresses itself.
type cloudWitness struct {
	compute, network *gophercloud.ServiceClient
	adminNetwork     bool
	dial             func(ctx context.Context, i int, addr string) error
}

func (s *Session) cloudWitness() *cloudWitness {
	w := &cloudWitness{}
	if s.Topology != nil && s.Clients != nil {
		c := s.fixtureClients()
		w.compute, w.network = c.Compute, c.Network
		if c.AdminCompute != nil {
			w.compute = c.AdminCompute
		}
		if c.AdminNetwork != nil {
			w.network, w.adminNetwork = c.AdminNetwork, true
		}
	}
	timeout := remote.DefaultConnectTimeout
	if s.dialer != nil && s.dialer.ConnectTimeout > 0 {
		timeout = s.dialer.ConnectTimeout
	}
	jump := s.Config.GuestAccess.Mode == config.AccessJump
	w.dial = func(ctx context.Context, i int, addr string) error {
		if jump {
			if i >= len(s.Guests) || s.Guests[i] == nil {
				return errors.New("no SSH connection to it through the jump host")
			}
			res, err := s.Guests[i].Run(remote.WithBound(ctx, timeout, "the look after a window: one connect"), "true")
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
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("%w (404)", errGone)
	}
	return err
}

func (w *cloudWitness) Server(ctx context.Context, id string) (serverNow, error) {
	if w.compute == nil {
		return serverNow{}, errors.New("no compute client")
	}
	srv, err := servers.Get(ctx, w.compute, id).Extract()
	if err != nil {
		return serverNow{}, gone(err)
	}
	now := serverNow{Status: srv.Status, Host: srv.Host, Hypervisor: srv.HypervisorHostname, HostID: srv.HostID}
	if srv.Status == "ERROR" {
		now.Fault = srv.Fault.Message
		if now.Fault == "" {
			now.Fault = "Nova gave no fault message"
		}
	}
	return now, nil
}

type boundPort struct {
	ports.Port
	portsbinding.PortsBindingExt
}

func (w *cloudWitness) Port(ctx context.Context, id string) (portNow, error) {
	if w.network == nil {
		return portNow{}, errors.New("no network client")
	}
	var p boundPort
	if err := ports.Get(ctx, w.network, id).ExtractInto(&p); err != nil {
		return portNow{}, gone(err)
	}
	return portNow{Status: p.Status, Binding: w.adminNetwork, HostID: p.HostID, VIFType: p.VIFType}, nil
}

func (w *cloudWitness) Answers(ctx context.Context, i int, addr string) error {
	return w.dial(ctx, i, addr)
}
