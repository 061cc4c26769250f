package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/tools/internal/cli/clitest"
)

func TestHelpConvention(t *testing.T) { clitest.HelpConvention(t, run) }

// The lab's own config (its SSH key, made by lab/up.sh, replaced by a
// file of the test's so it runs without a lab): the table names every
// step, and -ginkgo-timeout prints only the total, rounded up to a minute,
// as ginkgo parses it.
func TestLabConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "lab", "harness.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	clitest.SSHKey(t, dir, "id_ed25519")
	const labKey = "/var/lib/asap2lab/ssh/id_ed25519"
	if !bytes.Contains(b, []byte(labKey)) {
		t.Fatalf("lab/harness.yaml no longer names %s: update this test", labKey)
	}
	cfg := filepath.Join(dir, "harness.yaml")
	if err := os.WriteFile(cfg, bytes.ReplaceAll(b, []byte(labKey), []byte(key)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{cfg}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, step := range []string{"build the topology", "reach guests and hypervisors", "prove the path (offload checks)", "measure the profiles", "tear down", "one step at its bound", "margin", "total", "Artifacts: about ", "MiB in run.output_dir (2 × (16 MiB"} {
		if !strings.Contains(out.String(), step) {
			t.Errorf("no %q line in:\n%s", step, out.String())
		}
	}
	t.Log(out.String())
	out.Reset()
	if code := run([]string{"-ginkgo-timeout", cfg}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := strings.TrimSpace(out.String()); !strings.HasSuffix(got, "m0s") || strings.ContainsAny(got, " \n") {
		t.Errorf("-ginkgo-timeout printed %q, want one whole-minute duration", got)
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{{}, {"a.yaml", "b.yaml"}, {filepath.Join(t.TempDir(), "missing.yaml")}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || out.Len() != 0 || errb.Len() == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 with the reason on stderr", args, code, out.String(), errb.String())
		}
	}
}
