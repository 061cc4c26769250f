package harness

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// CollectTopologyEvidence saves, before teardown, what the cloud says about
// the run's servers and ports: each server's JSON (with host and fault when
// the admin entry is there), its console log, and each port's JSON (binding
// details). It never fails the run: what cannot be read is logged and saved
// as the error text.
func (s *Session) CollectTopologyEvidence(ctx context.Context) {
	if s.Topology == nil {
		return
	}
	compute, network := s.Clients.Tenant.Compute, s.Clients.Tenant.Network
	if s.Clients.Admin != nil {
		compute, network = s.Clients.Admin.Compute, s.Clients.Admin.Network
	}
	for _, srv := range s.Topology.Servers {
		if srv.ID == "" {
			continue
		}
		// The API's own answer ({"server": {…}}): the result's typed
		// ExtractInto takes a struct only.
		var body map[string]any
		err := servers.Get(ctx, compute, srv.ID).Result.ExtractInto(&body)
		s.saveEvidenceJSON("topology/server-"+srv.Name+".json", body, err)
		console, err := servers.ShowConsoleOutput(ctx, s.Clients.Tenant.Compute, srv.ID, servers.ShowConsoleOutputOpts{Length: 200}).Extract()
		if err != nil {
			console = "console log unavailable: " + err.Error()
		}
		if _, serr := s.SaveArtifact("topology/console-"+srv.Name+".txt", []byte(console)); serr != nil {
			s.Logf("saving console log: %v", serr)
		}
		for _, id := range []string{srv.ManagementPortID, srv.DataPortID} {
			if id == "" {
				continue
			}
			var pb map[string]any
			err := ports.Get(ctx, network, id).Result.ExtractInto(&pb)
			s.saveEvidenceJSON("topology/port-"+id+".json", pb, err)
		}
	}
}

func (s *Session) saveEvidenceJSON(rel string, v any, err error) {
	var data []byte
	if err != nil {
		data = []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
		s.Logf("evidence %s: %v", rel, err)
	} else if data, err = json.MarshalIndent(v, "", "  "); err != nil {
		data = []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
	}
	if _, serr := s.SaveArtifact(rel, data); serr != nil {
		s.Logf("saving %s: %v", rel, serr)
	}
}
