package results

import "testing"

// Seed-formatted numbers (source: the seed's tables, see e2e/report/seed_test.go).
func TestFormatting(t *testing.T) {
	for in, want := range map[float64]string{16.5e9: "16.5 Gbit/s", 2.76e9: "2.76 Gbit/s", 891e6: "891 Mbit/s", 7.5e9: "7.50 Gbit/s",
		999.7e6: "1.00 Gbit/s", 0: "0 bit/s", 1234: "1.23 Kbit/s", -1: Dash} {
		if got := FormatBps(in); got != want {
			t.Errorf("FormatBps(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{27: "27%", 0.046: "0.046%", 0.00017: "0.00017%", 0.3: "0.3%", 0: "0%", 2.7: "2.7%",
		0.0094: "0.0094%", 100: "100%", 9.96: "10%", 0.12345: "0.12%"} {
		if got := FormatLoss(in); got != want {
			t.Errorf("FormatLoss(%v) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		in    float64
		whole bool
		want  string
	}{{5.98, true, "~6×"}, {1.97, true, "~2×"}, {3.98, false, "~4.0×"}, {19.59, false, "~20×"}, {35.76, false, "~36×"}, {2.629, false, "~2.6×"}, {0.5, false, "~0.50×"}} {
		if got := FormatGain(c.in, c.whole); got != c.want {
			t.Errorf("FormatGain(%v, %v) = %q, want %q", c.in, c.whole, got, c.want)
		}
	}
}
