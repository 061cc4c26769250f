package cloud

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
)

// ServiceVersions is what the cloud's services say of themselves in their
// version documents: the OpenStack release a run measured, read, never
// typed.
type ServiceVersions struct {
	// ComputeMin and ComputeMax are Nova's microversion range ("2.1",
	// "2.100").
	ComputeMin, ComputeMax string
	// Network are the versions Neutron lists at its root, "<id> <status>"
	// ("v2.0 CURRENT").
	Network []string
	// Identity is Keystone's version at the auth URL, "<id> <status>"
	// ("v3.14 stable"); "" when the Set has no provider to ask.
	Identity string
}

// ReadServiceVersions reads s's version documents: Nova's at its endpoint,
// Neutron's at its endpoint's root, Keystone's at the auth URL. What
// cannot be read is left empty and named in the error (every failure at
// once); what was read is returned either way.
func ReadServiceVersions(ctx context.Context, s *Set) (ServiceVersions, error) {
	var v ServiceVersions
	var errs []error
	if s.Compute != nil {
		doc, err := computeVersion(ctx, s.Compute)
		if err != nil {
			errs = append(errs, err)
		}
		v.ComputeMin, v.ComputeMax = doc.MinVersion, doc.Version
	}
	if s.Network != nil {
		var err error
		if v.Network, err = networkVersions(ctx, s.Network); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Provider != nil && s.Provider.IdentityEndpoint != "" {
		var err error
		if v.Identity, err = identityVersion(ctx, s.Provider); err != nil {
			errs = append(errs, err)
		}
	}
	return v, errors.Join(errs...)
}

// NetworkRoot is the root of Neutron's endpoint, where its version
// document is: the catalog's URL (gophercloud's Endpoint, with
// ResourceBase its v2.0/ below), or Endpoint less v2.0/ where a client
// was built on the versioned URL.
func NetworkRoot(network *gophercloud.ServiceClient) string {
	return strings.TrimSuffix(network.Endpoint, "v2.0/")
}

// networkVersions is Neutron's version list (networking api-ref "List API
// versions", GET /: {"versions": [{"id": "v2.0", "status": "CURRENT",
// "links": [...]}]}), each "<id> <status>", sorted.
func networkVersions(ctx context.Context, network *gophercloud.ServiceClient) ([]string, error) {
	root := NetworkRoot(network)
	var doc struct {
		Versions []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"versions"`
	}
	if _, err := network.Get(ctx, root, &doc, &gophercloud.RequestOpts{OkCodes: []int{200, 300}}); err != nil {
		return nil, fmt.Errorf("network version document at %s: %w", root, Describe(err))
	}
	var out []string
	for _, d := range doc.Versions {
		out = append(out, strings.TrimSpace(d.ID+" "+d.Status))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("network version document at %s lists no version", root)
	}
	sort.Strings(out)
	return out, nil
}

// identityVersion is Keystone's version at the auth URL: a versioned URL
// (…/v3/) answers one version (identity api-ref "Show API version
// details", GET /v3: {"version": {"id": "v3.14", "status": "stable",
// ...}}), the root the list of them ("List versions", GET /:
// {"versions": {"values": [...]}}, 300), of which the stable ones are
// taken.
func identityVersion(ctx context.Context, p *gophercloud.ProviderClient) (string, error) {
	url := p.IdentityEndpoint
	if !strings.HasSuffix(url, "/") {
		url += "/"
	}
	var doc struct {
		Version *struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"version"`
		Versions struct {
			Values []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"values"`
		} `json:"versions"`
	}
	sc := &gophercloud.ServiceClient{ProviderClient: p, Endpoint: url, Type: "identity"}
	if _, err := sc.Get(ctx, url, &doc, &gophercloud.RequestOpts{OkCodes: []int{200, 300}}); err != nil {
		return "", fmt.Errorf("identity version document at %s: %w", url, Describe(err))
	}
	if doc.Version != nil && doc.Version.ID != "" {
		return strings.TrimSpace(doc.Version.ID + " " + doc.Version.Status), nil
	}
	var out []string
	for _, v := range doc.Versions.Values {
		if v.Status == "stable" {
			out = append(out, v.ID+" "+v.Status)
		}
	}
	if len(out) == 0 {
		return "", fmt.Errorf("identity version document at %s names no stable version", url)
	}
	sort.Strings(out)
	return strings.Join(out, ", "), nil
}
