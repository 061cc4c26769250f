// Package cloud builds the gophercloud clients of a run from clouds.yaml:
// one Set for the tenant entry and, when configured, one for the admin
// entry. Every client shares a transport that retries safe requests on
// 502/503/504 and dropped connections (bounded by the api_retry interval)
// and logs through a Redactor, so no password or token reaches a log.
//
// Credentials are read by gophercloud's clouds package: clouds.yaml from
// $OS_CLIENT_CONFIG_FILE, else ./, ~/.config/openstack/, /etc/openstack/;
// secure.yaml from $OS_CLIENT_SECURE_FILE, else beside clouds.yaml; region from the entry, $OS_REGION_NAME or cloud.region;
// interface from the entry or $OS_INTERFACE.
//
// Beside the clients:
//
//   - versions.go: ReadServiceVersions, what the run measured, read and never
//     typed: Nova's microversion range from its version document, the versions
//     Neutron lists at its endpoint's root (NetworkRoot), Keystone's at the
//     auth URL.
//   - retry.go: a refusal for the rate (429, 413 with Retry-After) is waited
//     out whatever the method (Retry-After in seconds or as a date, cut to
//     intervals.rate_limit's poll, bounded by its timeout), logged with the
//     service that refused (NameServices) and counted (RateLimits, which the
//     fleet's pace reads).
//   - errors.go: QuotaExceeded names the quota of a 403/409/413 refusal, which
//     is never retried.
//
// Microversions are set on copies of a client, never on the shared one.
package cloud

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// DefaultComputeMicroversion is set on the Compute clients: 2.26 brought
// server tags, 2.74 host / hypervisor_hostname in a server create (host
// pinning without the az:host form).
const DefaultComputeMicroversion = "2.74"

// Set is the clients of one clouds.yaml entry.
type Set struct {
	Cloud    string // clouds.yaml entry name
	Region   string
	Provider *gophercloud.ProviderClient
	// Compute speaks Nova at ComputeMicroversion; it is this package's own
	// copy: use WithMicroversion for another version, never mutate it.
	Compute *gophercloud.ServiceClient
	Network *gophercloud.ServiceClient
	Image   *gophercloud.ServiceClient
	// Placement is the admin Set's Placement, nil in the tenant's and when
	// the entry's catalog has no placement endpoint: it is read only to
	// say why a server never leaves BUILD (the host the scheduler claimed
	// for it, before nova-compute there records it).
	Placement *gophercloud.ServiceClient
	// ComputeMaxMicroversion is the highest microversion Nova announced.
	ComputeMaxMicroversion string
	// ProjectID and ProjectName are the project the entry's token is
	// scoped to (Keystone v3's token body; empty when it names none): the
	// project of every resource this Set creates.
	ProjectID, ProjectName string
}

// Clients is the tenant Set and the optional admin Set of a run.
type Clients struct {
	Tenant *Set
	Admin  *Set // nil when config.Cloud.Admin is empty
	// Redactor masks the passwords, secrets and tokens of both entries;
	// pass every line that may quote an API exchange through it.
	Redactor *Redactor
	// RateLimits counts the requests of either entry the cloud refused
	// for their rate and the clients waited out (RetryTransport).
	RateLimits *RateLimits
}

// HasAdmin says whether admin clients exist.
func (c *Clients) HasAdmin() bool { return c.Admin != nil }

// PinProblem says why servers the admin entry pins to a host (fleet,
// placement.hosts) could not take ports the tenant entry creates ("" when
// they can, or when a project is not known): a server belongs to the
// project of the token that creates it, and Nova refuses a port of another
// project (PortNotUsable on the compute node, the server in ERROR after
// its retries) — so the two entries must be scoped to one project.
func (c *Clients) PinProblem() string {
	if c.Admin == nil || c.Tenant == nil || c.Admin.ProjectID == "" || c.Tenant.ProjectID == "" || c.Admin.ProjectID == c.Tenant.ProjectID {
		return ""
	}
	return fmt.Sprintf("cloud.admin %q is scoped to project %s (%s), cloud.tenant %q to project %s (%s): the servers the admin pins to their hosts would belong to %s and Nova refuses the tenant's ports for them (PortNotUsable); scope the admin entry to the tenant's project (a user with the admin role in %s) or set cloud.tenant to the admin entry",
		c.Admin.Cloud, c.Admin.ProjectName, c.Admin.ProjectID, c.Tenant.Cloud, c.Tenant.ProjectName, c.Tenant.ProjectID, c.Admin.ProjectName, c.Tenant.ProjectName)
}

// Option adjusts NewClients.
type Option func(*options)

type options struct {
	logf         Logf
	requestLog   Logf
	retry        wait.Interval
	rateLimit    wait.Interval
	rateLimits   *RateLimits
	microversion string
	parseOpts    []clouds.ParseOption
	retryT       func(*RetryTransport) // tests: fake clock
}

// WithLogf sets where retry lines (and other notices) go; they pass through
// the Redactor. Default: discarded.
func WithLogf(logf Logf) Option { return func(o *options) { o.logf = logf } }

// WithRequestLog logs every API request (method, URL, status, time, request
// body), redacted. For debugging a cloud.
func WithRequestLog(logf Logf) Option { return func(o *options) { o.requestLog = logf } }

// WithRetry sets the bound of retries (config.IntervalAPIRetry of the run).
// Default: config.DefaultIntervals[config.IntervalAPIRetry].
func WithRetry(iv wait.Interval) Option { return func(o *options) { o.retry = iv } }

// WithRateLimit sets the bound of the waits after rate-limit refusals
// (config.IntervalRateLimit of the run). Default:
// config.DefaultIntervals[config.IntervalRateLimit].
func WithRateLimit(iv wait.Interval) Option { return func(o *options) { o.rateLimit = iv } }

// WithParseOptions adds options of gophercloud's clouds.Parse (e.g.
// clouds.WithLocations) to both entries.
func WithParseOptions(opts ...clouds.ParseOption) Option {
	return func(o *options) { o.parseOpts = append(o.parseOpts, opts...) }
}

// NewClients authenticates the tenant entry and, when cfg.Admin is set, the
// admin entry, and builds their Compute, Network and Image clients. It
// checks that Nova supports the compute microversion. Errors name the entry
// and carry the cloud's status and message.
func NewClients(ctx context.Context, cfg config.Cloud, opts ...Option) (*Clients, error) {
	o := options{retry: config.DefaultIntervals[config.IntervalAPIRetry], rateLimit: config.DefaultIntervals[config.IntervalRateLimit],
		rateLimits: &RateLimits{}, microversion: DefaultComputeMicroversion}
	for _, apply := range opts {
		apply(&o)
	}
	if cfg.Tenant == "" {
		return nil, fmt.Errorf("cloud: no tenant clouds.yaml entry (config cloud.tenant or $OS_CLOUD)")
	}
	c := &Clients{Redactor: NewRedactor(), RateLimits: o.rateLimits}
	var err error
	if c.Tenant, err = newSet(ctx, cfg.Tenant, cfg.Region, c.Redactor, o, false); err != nil {
		return nil, fmt.Errorf("cloud: tenant entry %q: %w", cfg.Tenant, err)
	}
	if cfg.Admin != "" {
		if c.Admin, err = newSet(ctx, cfg.Admin, cfg.Region, c.Redactor, o, true); err != nil {
			return nil, fmt.Errorf("cloud: admin entry %q: %w", cfg.Admin, err)
		}
	}
	return c, nil
}

// newSet authenticates entry name and builds its clients; withPlacement
// adds Placement (the admin's: Placement's policy lets only an admin read
// allocations).
func newSet(ctx context.Context, name, region string, red *Redactor, o options, withPlacement bool) (*Set, error) {
	popts := []clouds.ParseOption{clouds.WithCloudName(name)}
	// gophercloud searches secure.yaml in the default places even when
	// $OS_CLIENT_CONFIG_FILE names clouds.yaml; like openstacksdk, look
	// beside it (or at $OS_CLIENT_SECURE_FILE).
	if p := os.Getenv("OS_CLIENT_CONFIG_FILE"); p != "" {
		popts = append(popts, clouds.WithLocations(p))
	}
	if p := os.Getenv("OS_CLIENT_SECURE_FILE"); p != "" {
		popts = append(popts, clouds.WithSecureLocations(p))
	}
	popts = append(popts, o.parseOpts...)
	if region != "" {
		popts = append(popts, clouds.WithRegion(region))
	}
	ao, eo, tlsConfig, err := clouds.Parse(popts...)
	if err != nil {
		where := "clouds.yaml"
		if p := os.Getenv("OS_CLIENT_CONFIG_FILE"); p != "" {
			where = p
		}
		// The chain is kept (errors.As finds clouds.ErrFileNotFound); the
		// message goes through the Redactor.
		return nil, fmt.Errorf("read %s: %w", where, redactErr(red, err))
	}
	red.Add(ao.Password, ao.ApplicationCredentialSecret, ao.TokenID)
	ao.AllowReauth = ao.TokenID == ""

	provider, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("auth_url %q: %w", ao.IdentityEndpoint, err)
	}
	red.AddSource(provider.Token)
	rt, tr := transport(o, tlsConfig, red)
	provider.HTTPClient = http.Client{Transport: tr}
	rt.NameServices(map[string]string{ao.IdentityEndpoint: "identity"})
	if err := openstack.Authenticate(ctx, provider, ao); err != nil {
		// A token request is a POST, never retried (RetryTransport): a
		// connection Keystone closed without an answer is its own failure
		// (an unhandled error answers so through uwsgi), not the network's.
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("authenticate at %s: %w (Keystone closed the connection without an answer at %sZ: an error inside Keystone, which its log says)",
				ao.IdentityEndpoint, redactErr(red, err), time.Now().UTC().Format("15:04:05"))
		}
		return nil, fmt.Errorf("authenticate at %s: %w", ao.IdentityEndpoint, redactErr(red, Describe(err)))
	}
	s := &Set{Cloud: name, Region: eo.Region, Provider: provider}
	if r, ok := provider.GetAuthResult().(tokens.CreateResult); ok {
		if p, err := r.ExtractProject(); err == nil && p != nil {
			s.ProjectID, s.ProjectName = p.ID, p.Name
		}
	}
	compute, err := openstack.NewComputeV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("compute endpoint: %w", err)
	}
	s.Compute = WithMicroversion(compute, o.microversion)
	if s.Network, err = openstack.NewNetworkV2(provider, eo); err != nil {
		return nil, fmt.Errorf("network endpoint: %w", err)
	}
	if s.Image, err = openstack.NewImageV2(provider, eo); err != nil {
		return nil, fmt.Errorf("image endpoint: %w", err)
	}
	if withPlacement {
		// Like the others, the endpoint is discovered (a GET of its root):
		// an endpoint that does not answer fails here; one the catalog
		// lacks leaves Placement nil.
		switch pl, err := openstack.NewPlacementV1(provider, eo); {
		case err == nil:
			s.Placement = pl
		case !errors.As(err, new(*gophercloud.ErrEndpointNotFound)):
			return nil, fmt.Errorf("placement endpoint: %w", err)
		}
	}
	rt.NameServices(map[string]string{s.Compute.Endpoint: "compute (Nova)", s.Network.Endpoint: "network (Neutron)", s.Image.Endpoint: "image (Glance)"})
	if s.Placement != nil {
		rt.NameServices(map[string]string{s.Placement.Endpoint: "placement"})
	}
	if s.ComputeMaxMicroversion, err = checkMicroversion(ctx, s.Compute, o.microversion); err != nil {
		return nil, err
	}
	return s, nil
}

// transport is the chain every client of a run uses: [request log] ->
// retry -> base (TLS from clouds.yaml); and its retry transport.
func transport(o options, tlsConfig *tls.Config, red *Redactor) (*RetryTransport, http.RoundTripper) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConfig != nil {
		base.TLSClientConfig = tlsConfig
	}
	rt := &RetryTransport{Base: base, Interval: o.retry, RateLimit: o.rateLimit, RateLimits: o.rateLimits, Logf: red.Logf(o.logf)}
	if o.retryT != nil {
		o.retryT(rt)
	}
	if o.requestLog == nil {
		return rt, rt
	}
	return rt, &LogTransport{Base: rt, Logf: o.requestLog, Redactor: red}
}

// WithMicroversion returns a copy of sc speaking microversion v; sc itself
// is not changed (other users of it keep their version).
func WithMicroversion(sc *gophercloud.ServiceClient, v string) *gophercloud.ServiceClient {
	cp := *sc
	cp.Microversion = v
	return &cp
}

// checkMicroversion asks Nova for its version document and fails when it
// does not support want. It returns Nova's maximum.
func checkMicroversion(ctx context.Context, compute *gophercloud.ServiceClient, want string) (string, error) {
	doc, err := computeVersion(ctx, compute)
	if err != nil {
		return "", err
	}
	max, min := doc.Version, doc.MinVersion
	if max == "" {
		return "", fmt.Errorf("compute API at %s (%s) announces no microversions; the harness needs %s", compute.Endpoint, doc.ID, want)
	}
	if less(max, want) || (min != "" && less(want, min)) {
		return max, fmt.Errorf("compute API at %s supports microversions %s to %s; the harness needs %s (server tags, host-targeted create)", compute.Endpoint, min, max, want)
	}
	return max, nil
}

// novaVersion is Nova's version document at its endpoint (compute api-ref
// "Show Details of Specific API Version", nova doc/api_samples/versions/
// v21-version-get-resp.json): {"version": {"id": "v2.1", "status":
// "CURRENT", "version": "2.100", "min_version": "2.1", ...}}.
type novaVersion struct {
	ID         string `json:"id"`
	Version    string `json:"version"`
	MinVersion string `json:"min_version"`
}

func computeVersion(ctx context.Context, compute *gophercloud.ServiceClient) (novaVersion, error) {
	var doc struct {
		Version novaVersion `json:"version"`
	}
	if _, err := compute.Get(ctx, compute.Endpoint, &doc, &gophercloud.RequestOpts{OkCodes: []int{200}}); err != nil {
		return novaVersion{}, fmt.Errorf("compute version document at %s: %w", compute.Endpoint, Describe(err))
	}
	return doc.Version, nil
}

// less compares microversions "X.Y" numerically (2.9 < 2.74); an
// unparsable one compares as 0.0.
func less(a, b string) bool {
	am, an := splitVersion(a)
	bm, bn := splitVersion(b)
	if am != bm {
		return am < bm
	}
	return an < bn
}

func splitVersion(v string) (int, int) {
	major, minor, _ := strings.Cut(v, ".")
	x, _ := strconv.Atoi(major)
	y, _ := strconv.Atoi(minor)
	return x, y
}

// redactedError keeps the chain of err (errors.As still finds the API
// error) while its message goes through the Redactor.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactErr(red *Redactor, err error) error {
	return &redactedError{msg: red.Redact(err.Error()), err: err}
}
