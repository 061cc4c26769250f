package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/history"
	"github.com/mosk-qa/asap2-e2e/e2e/history/store"
	"github.com/mosk-qa/asap2-e2e/e2e/history/store/pgtest"
)

// fleetYear ingests 365 nightly runs of a 100-node fleet (ring pairs, four
// profiles: delivered rate, loss for UDP, and each node's offload verdict:
// 700 points and 405 environment facts a night) into the store at url, with ±30 % noise (σ 10 %) and,
// from night 358, a 10 % drop on one pair. It returns the ingest time.
func fleetYear(b *testing.B, url string) time.Duration {
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(37, 365))
	start := time.Now()
	for night := range 365 {
		run := history.Run{ID: fmt.Sprintf("night-%03d", night), StartedAt: time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).AddDate(0, 0, night), Build: fmt.Sprintf("mosk-%d", night/30)}
		var pts []history.Point
		facts := history.Facts{history.FactBackend: "ml2/ovn", history.FactCompute: "2.1 to 2.95", history.FactKubernetes: "v1.29.4",
			history.FactHarness: "1d40259abcdef0123456789abcdef0123456789a", history.FactMTU: "9000"}
		for n := range 100 {
			node := fmt.Sprintf("hv.cmp%03d.", n)
			facts[node+"kernel"] = fmt.Sprintf("6.1.0-%d", 27+night/120) // a kernel update every 120 nights
			facts[node+"ovs"], facts[node+"nic_driver"], facts[node+"firmware.running"] = "3.3.0", "mlx5_core 24.10", "28.39.1002"
			pair := fmt.Sprintf("cmp%03d>cmp%03d", n, (n+1)%100)
			for _, prof := range []string{"tcp-p1", "tcp-p15", "udp-b0-p1", "udp-500m-p1-l700"} {
				v := 9e9 * (1 + max(-0.3, min(0.3, r.NormFloat64()*0.1)))
				if n == 7 && night >= 358 {
					v *= 0.9
				}
				ser := history.Series{Metric: history.MetricDelivered, Profile: prof, Path: "asap2", Node: pair, Backend: "ovn", Mode: "security groups on"}
				pts = append(pts, history.Point{Series: ser, Value: v, Lo: v * 0.99, Hi: v * 1.01, N: 3})
				if prof[0] == 'u' {
					ser.Metric = history.MetricLoss
					l := r.Float64() * 0.1
					pts = append(pts, history.Point{Series: ser, Value: l, Lo: l, Hi: l, N: 3})
				}
			}
			ser := history.Series{Metric: history.MetricOffloaded, Profile: "fleet", Path: "asap2", Node: fmt.Sprintf("cmp%03d", n), Backend: "ovn", Mode: "security groups on"}
			pts = append(pts, history.Point{Series: ser, Value: 1, Lo: 1, Hi: 1, N: 1})
		}
		if _, err := s.Ingest(ctx, run, facts, pts); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// BenchmarkFleetYearSQLite: ingest and check of a year of a 100-node fleet
// (docs/HISTORY.md has the numbers):
//
//	nice -n 19 go test ./tools/history -run XXX -bench FleetYear -benchtime 1x
func BenchmarkFleetYearSQLite(b *testing.B) {
	benchFleetYear(b, filepath.Join(b.TempDir(), "h.db"))
}

func benchFleetYear(b *testing.B, url string) {
	ingest := fleetYear(b, url)
	var out strings.Builder
	for b.Loop() {
		out.Reset()
		if code := run([]string{"--store", url, "check"}, &out, os.Stderr); code != 1 {
			b.Fatalf("check exit %d, want 1 (the dropped pair)\n%s", code, out.String())
		}
	}
	if !strings.Contains(out.String(), "cmp007>cmp008") {
		b.Errorf("the 10 %% drop of cmp007>cmp008 not found:\n%s", out.String())
	}
	b.Log(out.String())
	b.ReportMetric(ingest.Seconds(), "ingest-s")
}

// BenchmarkFleetYearPostgres: the same against a PostgreSQL server started
// from Debian's package (skipped without it).
func BenchmarkFleetYearPostgres(b *testing.B) {
	benchFleetYear(b, pgtest.Start(b))
}
