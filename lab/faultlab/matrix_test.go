package faultlab

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
)

func TestRenderMatrix(t *testing.T) {
	f2f := 5.27
	rows := []Row{
		{Name: "TestFaults/a", Fault: "SIGINT", Phase: "SSH wait", Outcome: "exit 1; a | b\nc", Leftovers: "none", Seconds: 103, Passed: true},
		{Name: "TestFaults/b", Fault: "port deleted", Phase: "traffic window", Outcome: "exit 1", Leftovers: "none; SECRETS: x in y", Seconds: 70.4, FaultToFailureSeconds: &f2f},
	}
	now := time.Date(2026, 12, 2, 10, 51, 21, 0, time.FixedZone("CET", 3600))
	got := RenderMatrix(rows, now, 392600*time.Millisecond, []string{"a password", "b token"}, 274)
	want := "# Fault matrix on the lab (2026-12-02T09:51:21Z, 2 rows, 6m33s wall time)\n\n" +
		"| fault | phase | outcome | fault → failure s | leftovers | s | pass |\n|---|---|---|---|---|---|---|\n" +
		"| SIGINT | SSH wait | exit 1; a \\| b c | – | none | 103 | yes |\n" +
		"| port deleted | traffic window | exit 1 | 5.3 | none; SECRETS: x in y | 70 | **NO** |\n" +
		"\nSecrets: a password, b token (given through secure.yaml; clouds.yaml holds none) searched in 274 files " +
		"(configs, console, JUnit, harness.log, api.log, commands, results, reports, evidence, sweeper output) of all rows: found in 1 rows.\n"
	if got != want {
		t.Errorf("RenderMatrix =\n%s\nwant\n%s", got, want)
	}
}

// Record fills Seconds and Passed when the row's test ends; Rows sorts by name.
func TestMatrixRecord(t *testing.T) {
	var m Matrix
	t.Run("z", func(t *testing.T) {
		row := m.Record(t, "fault z", "phase z")
		row.Outcome = "exit 0"
	})
	t.Run("a", func(t *testing.T) {
		m.Record(t, "fault a", "phase a").SetFaultToFailure(4567 * time.Millisecond)
	})
	rows := m.Rows()
	if len(rows) != 2 || rows[0].Name != "TestMatrixRecord/a" || rows[1].Name != "TestMatrixRecord/z" {
		t.Fatalf("rows = %+v", rows)
	}
	if !rows[1].Passed || rows[1].Outcome != "exit 0" || rows[1].Fault != "fault z" {
		t.Errorf("row z = %+v", rows[1])
	}
	if rows[0].FaultToFailureSeconds == nil || *rows[0].FaultToFailureSeconds != 4.6 {
		t.Errorf("fault to failure of row a = %v, want 4.6", rows[0].FaultToFailureSeconds)
	}
}

func TestOverlap(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 2, 16, 8, s, 0, time.UTC) }
	for _, c := range []struct {
		a, b [2]int
		want time.Duration
	}{
		{[2]int{0, 30}, [2]int{10, 50}, 20 * time.Second},
		{[2]int{10, 50}, [2]int{0, 30}, 20 * time.Second},
		{[2]int{0, 50}, [2]int{10, 20}, 10 * time.Second},
		{[2]int{0, 10}, [2]int{20, 30}, -10 * time.Second},
	} {
		if got := Overlap(at(c.a[0]), at(c.a[1]), at(c.b[0]), at(c.b[1])); got != c.want {
			t.Errorf("Overlap(%v, %v) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

func TestTextHelpers(t *testing.T) {
	text := "one\ntwo x\nthree x\n"
	if got := Tail(text, 2); got != "two x\nthree x" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail("a\n", 5); got != "a" {
		t.Errorf("Tail of a short text = %q", got)
	}
	if got := GrepLine(text, `x$`); got != "two x" {
		t.Errorf("GrepLine = %q", got)
	}
	if got := GrepLine(text, `four`); got != "" {
		t.Errorf("GrepLine without a match = %q", got)
	}
	if got := Shorten("[10:10:26] abcdef", 3); got != "abc…" {
		t.Errorf("Shorten of a console line = %q", got)
	}
	if OrNone("") != "none" || OrNone("x") != "x" {
		t.Error("OrNone")
	}
	if got := GateCookie(5391); got != "0xfa150f" {
		t.Errorf("GateCookie(5391) = %s", got)
	}
}

type answered struct{}

func (answered) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

func TestHitNames(t *testing.T) {
	in, err := faultproxy.NewInjector(faultproxy.Plan{Rules: []faultproxy.Rule{
		{Name: "port-503", Method: "DELETE", Path: `/ports/`, Action: faultproxy.ActionStatus, Status: 503, Times: 2},
		{Name: "net-409", Method: "DELETE", Path: `/networks/`, Action: faultproxy.ActionStatus, Status: 409, Times: 1},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &faultproxy.Transport{Base: answered{}, Injector: in}}
	for _, path := range []string{"/v2.0/ports/1", "/v2.0/networks/1", "/v2.0/ports/2", "/v2.0/ports/3"} {
		req, _ := http.NewRequest("DELETE", "http://neutron.invalid"+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := HitNames(in); got != "port-503×2, net-409×1" {
		t.Errorf("HitNames = %q", got)
	}
	if got := mdCell("a|b\nc"); !strings.Contains(got, `a\|b c`) {
		t.Errorf("mdCell = %q", got)
	}
}
