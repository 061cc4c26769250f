package harness

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/fixtures"
	"github.com/mosk-qa/asap2-e2e/fixtures/fakecloud"
)

// The real witness against the fake cloud (fixtures/fakecloud: Nova and
// Neutron JSON as the API references give it, admin-only attributes hidden
// from the tenant): 404 is "no longer exists", host and binding come from
// the admin clients, and a guest's answer is a TCP connect (or, behind a
// jump host, a command over its SSH connection).

func TestCloudWitnessReadsTheCloud(t *testing.T) {
	c := fakecloud.New()
	t.Cleanup(c.Close)
	srv := c.Add("servers", fakecloud.Obj{"name": "asap2e2e-r1-vm0", "status": "ACTIVE", "hostId": "5f1d",
		"OS-EXT-SRV-ATTR:host": "compute1", "OS-EXT-SRV-ATTR:hypervisor_hostname": "compute1.lab"})
	broken := c.Add("servers", fakecloud.Obj{"name": "asap2e2e-r1-vm1", "status": "ERROR", "hostId": "9a2e",
		"fault": fakecloud.Obj{"code": 500, "message": "Instance failed to spawn"}, "_hv": "compute2", "_fault": "Instance failed to spawn"})
	port := c.Add("ports", fakecloud.Obj{"name": "asap2e2e-r1-vm0-data", "status": "DOWN",
		"binding:host_id": "", "binding:vif_type": "unbound"})

	tenantSet := &cloud.Set{Compute: c.Compute(), Network: c.Network()}
	admin := pairOf(&Run{Config: &config.Config{}, Clients: &cloud.Clients{
		Tenant: tenantSet, Admin: &cloud.Set{Compute: c.AdminCompute(), Network: c.AdminNetwork()},
	}}, &fixtures.Topology{}).cloudWitness()
	tenant := pairOf(&Run{Config: &config.Config{}, Clients: &cloud.Clients{Tenant: tenantSet}}, &fixtures.Topology{}).cloudWitness()
	ctx := context.Background()

	got, err := admin.Server(ctx, srv)
	if err != nil || got != (fixtures.ServerState{Status: "ACTIVE", Host: "compute1", Hypervisor: "compute1.lab", HostID: "5f1d"}) {
		t.Errorf("admin server: %+v, %v", got, err)
	}
	if got, err := tenant.Server(ctx, srv); err != nil || got != (fixtures.ServerState{Status: "ACTIVE", HostID: "5f1d"}) {
		t.Errorf("tenant server: %+v, %v", got, err)
	}
	if got, err := admin.Server(ctx, broken); err != nil || got.Status != "ERROR" || got.Fault != "Instance failed to spawn" ||
		!strings.Contains(got.Cause, "instance action create (req-"+broken+"): event compute__do_build_and_run_instance on compute2: Error: Build of instance "+broken+" aborted: Instance failed to spawn") {
		t.Errorf("server in ERROR: %+v, %v", got, err)
	}
	if got, err := admin.Port(ctx, port); err != nil || got != (fixtures.PortState{Status: "DOWN", Binding: true, VIFType: "unbound"}) {
		t.Errorf("admin port: %+v, %v", got, err)
	}
	if got, err := tenant.Port(ctx, port); err != nil || got != (fixtures.PortState{Status: "DOWN"}) {
		t.Errorf("tenant port (no binding visible): %+v, %v", got, err)
	}

	c.Remove("ports", port)
	c.Remove("servers", srv)
	if _, err := admin.Port(ctx, port); !errors.Is(err, errGone) {
		t.Errorf("deleted port: %v, want errGone", err)
	}
	if _, err := admin.Server(ctx, srv); !errors.Is(err, errGone) {
		t.Errorf("deleted server: %v, want errGone", err)
	}
	c.Faults = []*fakecloud.Fault{{Method: "GET", Path: regexp.MustCompile(`^ports/`), Status: 500, Body: `{"NeutronError": {"type": "HTTPInternalServerError", "message": "boom", "detail": ""}}`}}
	if _, err := admin.Port(ctx, port); err == nil || errors.Is(err, errGone) {
		t.Errorf("a failing look-up must not read as gone: %v", err)
	}

	none := pairOf(&Run{Config: &config.Config{}}, nil).cloudWitness()
	if _, err := none.Server(ctx, srv); err == nil {
		t.Error("no clients: no error")
	}
}

func TestCloudWitnessTriesTheManagementPath(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := ln.Addr().String()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shut := closed.Addr().String()
	closed.Close()

	direct := pairOf(&Run{Config: &config.Config{GuestAccess: config.GuestAccess{Mode: config.AccessManagementNetwork}}}, nil).cloudWitness()
	ctx := context.Background()
	if err := direct.Answers(ctx, 0, open); err != nil {
		t.Errorf("listening address: %v", err)
	}
	if err := direct.Answers(ctx, 0, shut); err == nil {
		t.Errorf("closed address %s answers", shut)
	}

	// Behind a jump host: the guest's own SSH connection runs `true`.
	w := fakeremote.NewWorld()
	up, down := fakeremote.New("guest vm0", w), fakeremote.New("guest vm1", w)
	up.On("true", fakeremote.Reply{})
	down.On("true", fakeremote.Reply{Err: errors.New("ssh: connection lost")})
	jump := pairOf(&Run{Config: &config.Config{GuestAccess: config.GuestAccess{Mode: config.AccessJump}}}, nil, up, down).cloudWitness()
	if err := jump.Answers(ctx, 0, "198.19.128.10:22"); err != nil {
		t.Errorf("through the jump host: %v", err)
	}
	if err := jump.Answers(ctx, 1, "198.19.128.11:22"); err == nil {
		t.Error("a lost guest answers")
	}
	if err := jump.Answers(ctx, 2, "198.19.128.12:22"); err == nil {
		t.Error("a guest without a connection answers")
	}
}

// The evidence saved before teardown holds the API's answers — also for a
// port deleted behind the harness's back, whose file says it is gone.
func TestCollectTopologyEvidenceSavesTheAPIsAnswers(t *testing.T) {
	c := fakecloud.New()
	t.Cleanup(c.Close)
	srv := c.Add("servers", fakecloud.Obj{"name": "asap2e2e-r1-vm0", "status": "ACTIVE", "OS-EXT-SRV-ATTR:host": "compute1"})
	mgmt := c.Add("ports", fakecloud.Obj{"name": "asap2e2e-r1-vm0-mgmt", "status": "ACTIVE", "binding:host_id": "compute1"})
	data := "e503d1a4-7c2b-4f5e-8a1d-3b9c0e6f2a10" // deleted: never added
	sets := &cloud.Set{Compute: c.Compute(), Network: c.Network()}
	admin := &cloud.Set{Compute: c.AdminCompute(), Network: c.AdminNetwork()}
	var console bytes.Buffer
	s := pairOf(&Run{Config: &config.Config{}, Dir: t.TempDir(), Clients: &cloud.Clients{Tenant: sets, Admin: admin}, console: &console},
		&fixtures.Topology{Servers: []fixtures.Server{{ID: srv, Name: "asap2e2e-r1-vm0", ManagementPortID: mgmt, DataPortID: data}}})
	s.CollectTopologyEvidence(context.Background())
	for file, want := range map[string]string{
		"topology/server-asap2e2e-r1-vm0.json": `"OS-EXT-SRV-ATTR:host": "compute1"`,
		"topology/port-" + mgmt + ".json":      `"binding:host_id": "compute1"`,
		"topology/port-" + data + ".json":      `404`,
	} {
		got, err := os.ReadFile(filepath.Join(s.Dir, file))
		if err != nil || !strings.Contains(string(got), want) {
			t.Errorf("%s: %v\n%s\nwant it to contain %s", file, err, got, want)
		}
	}
}
