package kube

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Every API call of this package is bounded by intervals.kube_api: an API
// server that accepts the connection and never answers fails the call at
// the interval's timeout, named, instead of holding the run until the
// caller's context ends (the suite's, which may be hours). Reads (list,
// get) that fail with a transient error (429, 5xx, a refused or reset
// connection) are tried again every poll within the same timeout; writes
// (create, delete) are sent once. The pods/exec streams are not API calls
// in this sense: remote.Bounded bounds each command.

// apiCall is the context of one write call.
func (c *Cluster) apiCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.api.Timeout)
}

// apiError wraps err of the call what; a call cut by the bound says so.
func (c *Cluster) apiError(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kubernetes: %s: no answer within %s (intervals.%s): %w", what, c.api.Timeout, config.IntervalKubeAPI, err)
	}
	return fmt.Errorf("kubernetes: %s: %w", what, err)
}

// read runs fn, a read call, within intervals.kube_api, again after a
// transient error.
func (c *Cluster) read(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	err := wait.Poll(ctx, c.api, what, func(ctx context.Context) (bool, error) {
		err := fn(ctx)
		if err == nil {
			return true, nil
		}
		if transient(err) && ctx.Err() == nil {
			return false, err
		}
		return false, wait.Stop(err)
	})
	var pe *wait.PollError
	if errors.As(err, &pe) && pe.TimedOut {
		last := pe.Err
		if pe.Last != nil {
			last = pe.Last
		}
		return fmt.Errorf("kubernetes: %s: no answer within %s (intervals.%s, %d attempts): %w", what, c.api.Timeout, config.IntervalKubeAPI, pe.Attempts, last)
	}
	return c.apiError(what, err)
}

// transient errors may pass when the same read is sent again.
func transient(err error) bool {
	switch {
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err):
		return true
	}
	var se apierrors.APIStatus
	return errors.As(err, &se) && se.Status().Code >= 500
}
