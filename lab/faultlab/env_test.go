package faultlab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCLI is an "openstack" reached through the layout's command_prefix: it
// answers every command on stdin with one listing and ends with the exit
// status and stderr a test gives it.
func fakeCLI(t *testing.T, listing string, exit int, stderr string) *Env {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "cli")
	// One command comes as arguments (its exit status is the command's),
	// several on stdin (the batch mode).
	body := "#!/bin/sh\n[ \"$1\" = openstack ] || exit 9\nif [ $# -gt 1 ]; then printf '%s\\n' '" + listing + "'; exit 0; fi\n" +
		"while read -r line; do printf '%s\\n' '" + listing + "'; done\n"
	if stderr != "" {
		body += "echo '" + stderr + "' >&2\n"
	}
	body += "exit " + string(rune('0'+exit)) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Env{Lab: &Lab{Tenant: "t", Admin: "a", CloudsFile: filepath.Join(dir, "clouds.yaml"), CommandPrefix: []string{script}}}
}

// Epoxy's openstackclient 7.4 exits 1 after a batch whose every command
// succeeded (found by the first fault matrix on LAB_RELEASE=epoxy: every
// row's leftover listing failed with "exit status 1" and nothing on
// stderr). The listing counts when each command left its listing and
// stderr is empty; a command that failed, or an error on stderr, still fails.
func TestListingAcceptsEpoxyBatchExitStatus(t *testing.T) {
	row := `[{"ID": "id-1", "Name": "asap2e2e-r1-net"}]`
	got, err := fakeCLI(t, row, 1, "").Listing(context.Background(), "r1")
	if err != nil {
		t.Fatalf("a batch with every listing and exit 1: %v", err)
	}
	if len(got) != 8 || got[0] != "flavor asap2e2e-r1-net (id-1)" {
		t.Errorf("listing = %q", got)
	}
	if _, err := fakeCLI(t, row, 1, "No Flavor found for 1234").Listing(context.Background(), "r1"); err == nil ||
		!strings.Contains(err.Error(), "No Flavor found for 1234") {
		t.Errorf("an error on stderr must fail the listing, got %v", err)
	}
	if _, err := fakeCLI(t, "not json", 1, "").Listing(context.Background(), "r1"); err == nil {
		t.Error("exit 1 without the listings must fail")
	}
	if got, err := fakeCLI(t, row, 0, "").Listing(context.Background(), "r2"); err != nil || len(got) != 0 {
		t.Errorf("Zed's exit 0, nothing of run r2: %q, %v", got, err)
	}
}
