package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// DataPathPing is the probe of the data path: one echo to the peer's data
// address, its reply awaited one second (iputils ping).
func DataPathPing(ip string) string { return fmt.Sprintf("ping -c 1 -W 1 %s", ip) }

// waitDataPath returns once each guest's ping of the other's data address
// is answered, polled within iv (intervals.data_path). A port reported
// ACTIVE, a guest that answers SSH on its management address: neither says
// the data network carries the pair's packets yet (the agent's flows, a
// tunnel or an ARP entry may still be missing, or under load be late), and
// a measured window opened before would read a missing path as a failed or
// slow profile (seen in the lab's fault matrix: iperf3's first connect
// failing "No route to host" 3 s after the second port went ACTIVE). A
// guest without ping stops the wait at once; a path that never answers
// names both guests, their hosts and data addresses.
func waitDataPath(ctx context.Context, iv wait.Interval, guests []remote.Runner, servers []fixtures.Server, logf func(string, ...any)) error {
	if len(guests) != 2 || len(servers) != 2 {
		return errors.New("data path: no pair of guests")
	}
	var errs []error
	for i, g := range guests {
		me, peer := servers[i], servers[1-i]
		var last remote.Result
		what := fmt.Sprintf("guest %s (on %s) reaching %s's data address %s (on %s)", me.Name, hostOf(me), peer.Name, peer.DataIP, hostOf(peer))
		err := wait.Poll(ctx, iv, what, func(ctx context.Context) (bool, error) {
			res, err := g.Run(ctx, DataPathPing(peer.DataIP))
			if err != nil {
				return false, err
			}
			last = res
			if res.ExitCode == 127 {
				return false, wait.Stop(fmt.Errorf("%s: the guest has no ping (iputils-ping), which the data path's check needs: %s", me.Name, strings.TrimSpace(string(res.Stderr))))
			}
			return res.OK(), nil
		})
		if err != nil {
			if out := strings.TrimSpace(string(last.Stdout) + " " + string(last.Stderr)); out != "" {
				err = fmt.Errorf("%w; the last ping said: %s", err, tail(out, 300))
			}
			errs = append(errs, err)
			continue
		}
		logf("data path: %s answers %s over the data network", peer.Name, me.Name)
	}
	return errors.Join(errs...)
}

func hostOf(s fixtures.Server) string {
	switch {
	case s.Hypervisor != "":
		return s.Hypervisor
	case s.Host != "":
		return s.Host
	}
	return "an unknown host"
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
