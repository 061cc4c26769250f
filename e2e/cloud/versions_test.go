package cloud

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
)

// The services' own version documents: Nova's microversion range, the
// versions Neutron lists at its root, Keystone's at the auth URL.
func TestReadServiceVersions(t *testing.T) {
	f := newFakeCloud(t)
	writeCloudsYAML(t, f.url())
	f.novaMax = "2.100"
	c, err := NewClients(context.Background(), config.Cloud{Tenant: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := ReadServiceVersions(context.Background(), c.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	want := ServiceVersions{ComputeMin: "2.1", ComputeMax: "2.100", Network: []string{"v2.0 CURRENT"}, Identity: "v3.14 stable"}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %+v, want %+v", v, want)
	}
	if n := f.callsTo("GET", "/network/"); n < 2 {
		t.Errorf("Neutron's root read %d times, want once more than discovery's", n)
	}
}

// A document that cannot be read is named; what was read is kept.
func TestReadServiceVersionsPartial(t *testing.T) {
	f := newFakeCloud(t)
	writeCloudsYAML(t, f.url())
	c, err := NewClients(context.Background(), config.Cloud{Tenant: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	set := *c.Tenant
	net := *set.Network
	net.Endpoint = f.url() + "/nothing/"
	set.Network = &net
	v, err := ReadServiceVersions(context.Background(), &set)
	if err == nil || !strings.Contains(err.Error(), "network version document at "+f.url()+"/nothing/") {
		t.Errorf("error %v, want the network document named", err)
	}
	if v.ComputeMax != "2.95" || v.Network != nil || v.Identity != "v3.14 stable" {
		t.Errorf("got %+v", v)
	}
}

func TestNetworkRoot(t *testing.T) {
	for in, want := range map[string]string{"https://neutron:9696/": "https://neutron:9696/", "http://x/network/v2.0/": "http://x/network/"} {
		if got := NetworkRoot(&gophercloud.ServiceClient{Endpoint: in}); got != want {
			t.Errorf("NetworkRoot(%s) = %s, want %s", in, got, want)
		}
	}
}
