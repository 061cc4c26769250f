// Command oidc is the lab's OpenID Connect identity provider (issue 36,
// "credentials that last the run"): what MOSK's Keycloak is to a
// kubeconfig's `auth-provider: oidc`, reduced to the refresh. It serves,
// over HTTPS with a CA of its own that it writes out,
//
//	/.well-known/openid-configuration  the discovery document
//	/keys                              the key set (one RSA key, RS256)
//	/token                             the refresh_token grant: a new id-token
//	                                   (iss, aud = the client id, sub, the
//	                                   username claim, iat, nbf, exp = iat +
//	                                   -lifetime) and a new refresh-token
//	/stats                             {"refresh_grants": N, "refused": M, ...}
//
// and logs one line a grant. The lab's kube-apiserver trusts it
// (--authentication-config, lab/kube/up.sh) and lab/kube/job.sh counts the
// grants a run took. It listens on a loopback address or one of the lab's
// 198.18.0.0/15 only: tests' traffic stays on the machine.
//
//	go build -o BIN ./lab/oidc
//	BIN -listen 127.0.0.1:16445 -dir DIR -refresh-tokens FILE [-client-id asap2lab] [-lifetime 60s] [-username-claim preferred_username]
//
// DIR keeps its CA (ca.crt, ca.key) and signing key (signing.key) across
// restarts, so the API server's trust and the id-tokens already issued
// outlive one; the serving certificate (for the listen address) is made
// at each start. FILE holds the refresh-tokens it accepts at first, one
// "TOKEN USER" a line.
//
// It uses the standard library only (issue 36).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command's flags.
type options struct {
	listen, dir, refreshTokens, clientID, usernameClaim string
	lifetime                                            time.Duration
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oidc", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.listen, "listen", "127.0.0.1:16445", "address:port to listen on (loopback or 198.18.0.0/15 only; port 0: any)")
	fs.StringVar(&o.dir, "dir", "", "directory of its CA (ca.crt, ca.key) and signing key, made when missing (required)")
	fs.StringVar(&o.refreshTokens, "refresh-tokens", "", `file of the refresh-tokens it accepts, "TOKEN USER" a line (required)`)
	fs.StringVar(&o.clientID, "client-id", "asap2lab", "the client id: the id-tokens' aud, the only client served")
	fs.StringVar(&o.usernameClaim, "username-claim", "preferred_username", "the claim that holds the user's name")
	fs.DurationVar(&o.lifetime, "lifetime", 60*time.Second, "how long an id-token is valid")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: oidc -dir DIR -refresh-tokens FILE [flags]: the lab's OpenID Connect identity provider (lab/oidc)")
		fs.PrintDefaults()
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "oidc: %v\n", err)
		fs.Usage()
		return 2
	}
	logger := log.New(stderr, "oidc: ", log.LstdFlags|log.LUTC)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, o, logger.Printf, nil); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// serve runs the issuer until ctx ends. ready, when set, gets its URL once
// it listens (the tests').
func serve(ctx context.Context, o options, logf func(string, ...any), ready func(url string)) error {
	if err := o.check(); err != nil {
		return err
	}
	text, err := os.ReadFile(o.refreshTokens)
	if err != nil {
		return err
	}
	tokens, err := parseRefreshTokens(o.refreshTokens, string(text))
	if err != nil {
		return err
	}
	st, err := loadState(o.dir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	addr := ln.Addr().(*net.TCPAddr)
	cert, err := st.servingCert(addr.IP)
	if err != nil {
		ln.Close()
		return err
	}
	url := "https://" + addr.String()
	is := &issuer{url: url, clientID: o.clientID, usernameClaim: o.usernameClaim, lifetime: o.lifetime,
		key: st.signing, kid: keyID(&st.signing.PublicKey), now: time.Now, logf: logf, refresh: tokens}
	srv := &http.Server{
		Handler:           is.handler(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // a probe's aborted handshake is no news
	}
	logf("issuer %s (CA %s, client %s, id-tokens for %s, username claim %s, %d refresh-token(s))",
		url, st.caFile, o.clientID, o.lifetime, o.usernameClaim, len(tokens))
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	if ready != nil {
		ready(url)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	is.mu.Lock()
	logf("stopped after %d refresh grant(s), %d refused", is.grants, is.refused)
	is.mu.Unlock()
	return err
}

// check names every bad flag at once.
func (o options) check() error {
	var problems []error
	if o.dir == "" {
		problems = append(problems, errors.New("-dir is required"))
	}
	if o.refreshTokens == "" {
		problems = append(problems, errors.New("-refresh-tokens is required"))
	}
	if o.clientID == "" || o.usernameClaim == "" {
		problems = append(problems, errors.New("-client-id and -username-claim must not be empty"))
	}
	if o.lifetime < time.Second {
		problems = append(problems, fmt.Errorf("-lifetime must be at least 1s, got %s", o.lifetime))
	}
	if err := checkListen(o.listen); err != nil {
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}

// labNet is where the lab's addresses are (RFC 2544's benchmarking range).
var labNet = netip.MustParsePrefix("198.18.0.0/15")

// checkListen allows an IP address of the machine's loopback or of the
// lab's 198.18.0.0/15, never a name or a wildcard: what listens for tests
// is reachable from this machine only.
func checkListen(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", listen, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("-listen %q: the host must be an IP address (loopback or 198.18.0.0/15), not a name", listen)
	}
	if ip = ip.Unmap(); !ip.IsLoopback() && !labNet.Contains(ip) {
		return fmt.Errorf("-listen %q: %s is neither loopback nor in the lab's %s", listen, ip, labNet)
	}
	return nil
}
