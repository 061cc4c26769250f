package kube

import "context"

// ServerVersion is the API server's version (client-go discovery's
// ServerVersion, GET /version: its gitVersion, "v1.29.4"), within
// intervals.kube_api and tried again after a transient error
// (kubeaccess.Versioned).
func (c *Cluster) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := c.read(ctx, "server version (GET /version)", func(ctx context.Context) error {
		type answer struct {
			v   string
			err error
		}
		done := make(chan answer, 1)
		// Discovery takes no context: the call is waited for within ctx
		// and abandoned (its answer dropped) when ctx ends.
		go func() {
			info, err := c.client.Discovery().ServerVersion()
			if err != nil {
				done <- answer{err: err}
				return
			}
			done <- answer{v: info.GitVersion}
		}()
		select {
		case a := <-done:
			v = a.v
			return a.err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return v, err
}
