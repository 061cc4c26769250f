package faults

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// testdata/openstack-batch-server-flavor.json was recorded on the lab with
//
//	printf 'server list -f json\nflavor list -f json\n' | OS_CLOUD=asap2lab-admin openstack
//
// (python-openstackclient 6.0 from Debian 12) while fault-matrix rows ran:
// an empty server list, then the flavors (three runs' "-faults" flavors).
func TestParseListingsRecordedBatch(t *testing.T) {
	raw, err := os.ReadFile("testdata/openstack-batch-server-flavor.json")
	if err != nil {
		t.Fatal(err)
	}
	cmds := []string{"server list", "flavor list --all"}
	got, err := parseListings(raw, cmds, "20261202t100335-d2cc")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"flavor asap2e2e-20261202t100335-d2cc-faults (889379ce-ced2-423a-b355-522b02840ce5)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseListings = %v, want %v", got, want)
	}
	if got, _ := parseListings(raw, cmds, "20991231t000000-0000"); len(got) != 0 {
		t.Errorf("another run id matched %v", got)
	}
}

func TestParseListingsCountsListings(t *testing.T) {
	if _, err := parseListings([]byte("[]\n"), []string{"server list", "port list"}, "x"); err == nil || !strings.Contains(err.Error(), "1 listings for 2 commands") {
		t.Errorf("a missing listing gave %v", err)
	}
	if _, err := parseListings([]byte("[]\n[]\n"), []string{"server list"}, "x"); err == nil || !strings.Contains(err.Error(), "more listings") {
		t.Errorf("an extra listing gave %v", err)
	}
	// The CLI's batch mode prints an error as text where a listing should be.
	if _, err := parseListings([]byte("[]\nopenstack: 'x' is not an openstack command\n"), []string{"server list", "port list"}, "x"); err == nil {
		t.Error("text instead of JSON was accepted")
	}
}

func TestSetCreatesNestedKeys(t *testing.T) {
	cfg := map[string]any{"run": map[string]any{"name_prefix": "asap2e2e"}}
	set(cfg, "run.keep_topology", true)
	set(cfg, "intervals.ssh_ready.timeout", "10s")
	want := map[string]any{
		"run":       map[string]any{"name_prefix": "asap2e2e", "keep_topology": true},
		"intervals": map[string]any{"ssh_ready": map[string]any{"timeout": "10s"}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("set gave %v, want %v", cfg, want)
	}
}

func TestExcerpt(t *testing.T) {
	log := "2026-12-02T10:10:26Z run x: artifacts in /out/iperf3-busy/x\n" +
		"2026-12-02T10:10:26Z TCP 1 stream (-P1) repeat 1 FAILED: iperf3 run tcp-p1: port 5201: iperf3 reported: the server is busy running a test. try again later\n"
	got := excerpt(log, `iperf3 reported: .*server is busy`, 0, 200)
	if got != "…iperf3 reported: the server is busy running a test. try again later" {
		t.Errorf("excerpt = %q", got)
	}
	if got := excerpt(log, `FAILED`, 1000, 40); got != "TCP 1 stream (-P1) repeat 1 FAILED: iper…" {
		t.Errorf("excerpt with context = %q (want the line from its start, timestamp dropped, cut to 40)", got)
	}
	if got := excerpt(log, `nothing like this`, 10, 10); got != "" {
		t.Errorf("no match gave %q", got)
	}
}
