package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// TestIntervalChartTimeAxisBounded: the time axis of an interval chart has
// at most maxXTicks labels, whatever range the intervals span. Its loop
// used to step t += step until t passed maxX+1e-9, so a results file that
// results.Decode accepts could hang the report: all intervals within 1e-15 s drew
// 5 million labels (14 s for one HTML report); at 1e17 s, or over
// -1e308..1e308, t += step left t where it was and the loop never ended.
func TestIntervalChartTimeAxisBounded(t *testing.T) {
	for _, c := range []struct {
		name       string
		start, end float64
		min        int // x labels at least
	}{
		{"iperf3 seconds", 83, 85, 2},
		{"one instant", 30, 30, 2},
		{"range of 1e-15 s", 0, 1e-15, 2},
		{"one instant at 1e17 s", 1e17, 1e17, 1},
		{"range over float64", -1e308, 1e308, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := htmlWithin(t, 10*time.Second, intervalResults(c.start, c.end))
			i := strings.Index(out, `class="chart intervals"`)
			if i < 0 {
				t.Fatal("no interval chart")
			}
			chart := out[i:]
			chart = chart[:strings.Index(chart, "</svg>")]
			// x labels sit below the axis (y = base+16), centred; y labels end-anchored
			if n := strings.Count(chart, `y="266" text-anchor="middle">`); n < c.min || n > maxXTicks {
				t.Errorf("%d time-axis labels, want %d..%d", n, c.min, maxXTicks)
			}
			if strings.Contains(chart, "NaN") || strings.Contains(chart, "Inf") {
				t.Errorf("chart has a NaN or Inf coordinate")
			}
		})
	}
}

// intervalResults is a results file with one TCP profile whose only
// repeat has one interval from start to end.
func intervalResults(start, end float64) []byte {
	return fmt.Appendf(nil, `{"schema_version":1,"run_id":"r","config":{"expected_path":"asap2"},"profiles":[`+
		`{"id":"tcp-p1","protocol":"tcp","streams":1,"runs":[{"repeat":1,"delivered_bps":1e9,`+
		`"intervals":[{"start":%v,"end":%v,"bps":1e9}]}]}]}`, start, end)
}

// htmlWithin decodes data and renders it as HTML, failing the test when
// that takes longer than limit (the renderer goroutine is then left behind).
func htmlWithin(t *testing.T, limit time.Duration, data []byte) string {
	t.Helper()
	r, err := results.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(r)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- string(HTML(s, Options{})) }()
	select {
	case out := <-done:
		return out
	case <-time.After(limit):
		t.Fatalf("HTML of %s took more than %v", data, limit)
		return ""
	}
}
