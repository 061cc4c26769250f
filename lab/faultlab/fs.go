package faultlab

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SmallFS mounts a tmpfs of size (mount's size option: "600k") on dir,
// created when missing; it is unmounted and dir removed when the test ends.
// The matrix runs as root.
func SmallFS(t testing.TB, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "asap2e2e-faults", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s on %s: %v: %s", size, dir, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
			return
		}
		_ = os.Remove(dir)
	})
	t.Logf("tmpfs of %s on %s", size, dir)
}
