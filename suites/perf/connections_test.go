package perf

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() { specs.Register(20, connectionSpecs, results.FamilyConnections) }

// connectionLadder are the counts with their own spec and label
// (connections-<N>); a count of connections.counts off the ladder runs in
// the last spec, labelled connections only.
var connectionLadder = []int{1, 10, 100, 1000, 10000}

// connectionSpecs are issue 22's connection-scale profile (label
// connections), inside the suite's Ordered container after the other
// profiles: the ladder's counts in order, then the others.
func connectionSpecs() {
	Describe("Connection scale", Label("connections"), func() {
		// run measures n connections and returns what is wrong with the
		// result: an iperf3 failure, nothing delivered, a hypervisor with
		// no conntrack read kept (a share is a measurement, never a silent
		// 0 %), a threshold the result violates. A share that fell is a
		// result, not a failure, unless a threshold gates it: the report
		// says where, with the numbers.
		measure := func(ctx SpecContext, n int) []string {
			cc := run.Config.Connections
			By(fmt.Sprintf("opening %d concurrent TCP connections: %s offload wait (conntrack read in it only), %s measured", n, cc.OffloadWait, cc.Duration))
			cr, err := pair.RunConnections(ctx, n)
			if err != nil {
				return []string{fmt.Sprintf("%d connections: %v", n, err)}
			}
			var bad []string
			if cr.DeliveredBps <= 0 {
				bad = append(bad, fmt.Sprintf("%d connections delivered nothing", n))
			}
			if cr.NotApplicable != "" {
				By(fmt.Sprintf("offloaded share %s", cr.NotApplicable))
			}
			for _, h := range cr.Hosts {
				By(fmt.Sprintf("%s: %s", h.Hypervisor, h.Reason))
				if h.Samples == 0 {
					bad = append(bad, fmt.Sprintf("%d connections, %s: no conntrack read kept: %s", n, h.Hypervisor, h.Reason))
				}
			}
			// A share that fell fails the spec only through a gate the
			// config sets (thresholds: offloaded_share, time_to_offload_seconds).
			return append(bad, thresholdsOf(results.ConnectionProfileID(n))...)
		}
		ladderSpecs(ladder{key: "connections.counts", spec: "opens %d concurrent connections", steps: connectionLadder,
			counts: func() []int { return run.Config.Connections.Counts }, label: results.ConnectionProfileID}, measure)
	})
}
