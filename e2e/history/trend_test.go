package history

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTrendPage(t *testing.T) {
	m := Metrics[MetricDelivered]
	var ss []TrendSeries
	for n, node := range []string{"cmp1>cmp2", "cmp2>cmp<3&"} {
		s := TrendSeries{Series: Series{Metric: m.Name, Profile: "tcp-p1", Path: "asap2", Node: node, Backend: "ovn", Mode: "security groups on"}}
		for i := range 20 {
			v := 10e9 * (1 + 0.01*float64(i%3))
			if n == 0 && i >= 15 {
				v *= 0.7
			}
			s.Points = append(s.Points, Point{Series: s.Series, RunID: fmt.Sprint(i), Value: v, Lo: v, Hi: v, N: 3})
			s.Runs = append(s.Runs, Run{ID: fmt.Sprintf("night-%02d", i), StartedAt: time.Date(2026, 11, 1+i, 2, 0, 0, 0, time.UTC), Build: fmt.Sprintf("b%d", i/15)})
			// the kernel of cmp2 moves at night 15; nights 0-4 were stored without facts
			kernel := "6.1.0-27"
			if i >= 15 {
				kernel = "6.1.0-28"
			}
			var f Facts
			if i >= 5 {
				f = Facts{FactBackend: "ml2/ovn", "hv.cmp2.kernel": kernel}
			}
			s.Facts = append(s.Facts, f)
		}
		s.ChangePoints = Detect(s.Points, m, Options{})
		if c, ok := Open(s.Points, m, Options{}); ok {
			s.Open = &c
		}
		ss = append(ss, s)
	}
	if ss[0].Open == nil {
		t.Fatal("the 30 % drop is not open")
	}
	page := string(Trend("nightly <asap2>", ss))
	for _, want := range []string{"<h1>nightly &lt;asap2&gt;</h1>", "Regressions in the newest run", "night-15", "b1", "-30.", "class=\"cp\"", "cmp2&gt;cmp&lt;3&amp;", "delivered_bps · tcp-p1"} {
		if !strings.Contains(page, want) {
			t.Errorf("trend page lacks %q", want)
		}
	}
	env := `<path class="env" d="M%.1f,211.0 l5,9 h-10 z"><title>night-15 (b1): environment changed at this run: kernel of cmp2 6.1.0-27 → 6.1.0-28</title></path>`
	if want := fmt.Sprintf(env, 70+15*(960-70-10)/19.0); strings.Count(page, `class="env"`) != 1 || !strings.Contains(page, want) {
		t.Errorf("want the one environment change marked at night-15 on the x axis: %s", want)
	}
	if strings.Count(page, "<svg") != 1 {
		t.Errorf("want one chart for the one family, got %d", strings.Count(page, "<svg"))
	}
	if strings.Index(page, "Regressions") > strings.Index(page, "<svg") {
		t.Error("the regressions table is not on top")
	}
	// Well-formed: the page parses as XML once the doctype is dropped.
	d := xml.NewDecoder(strings.NewReader(strings.TrimPrefix(page, "<!DOCTYPE html>\n")))
	d.Strict = false
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("page does not parse: %v", err)
			}
			break
		}
	}
}

func TestTrendHeatMap(t *testing.T) {
	var ss []TrendSeries
	for n := range 4 {
		s := TrendSeries{Series: Series{Metric: MetricDelivered, Profile: "tcp-p1", Path: "asap2", Node: fmt.Sprintf("cmp%d>cmp%d", n, n+1)}}
		for i := range 5 {
			v := 9e9
			if n == 2 && i == 4 {
				v = 7e9 // 22 % below the fleet on the last night
			}
			s.Points = append(s.Points, Point{Value: v, Lo: v, Hi: v})
			s.Runs = append(s.Runs, Run{ID: fmt.Sprintf("n%d", i), StartedAt: time.Date(2026, 11, 1+i, 0, 0, 0, 0, time.UTC)})
		}
		ss = append(ss, s)
	}
	page := string(Trend("fleet", ss))
	if strings.Count(page, "<rect") != 20 || strings.Count(page, "#feb2b2") != 1 || !strings.Contains(page, "cmp2&gt;cmp3 n4 (): 7e+09, 22.2 % worse") {
		t.Fatalf("heat map: %d cells, %d red\n%s", strings.Count(page, "<rect"), strings.Count(page, "#feb2b2"), page)
	}
}
