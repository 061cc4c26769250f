package faults

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/lab/faultlab"
)

// The rows' shared state: the lab environment (set up once, by the first
// row that asks) and the matrix they fill.
var (
	envOnce sync.Once
	theEnv  *faultlab.Env
	envSkip string
	envErr  error

	matrix faultlab.Matrix
)

// lab returns the shared environment, skipping the test (with the reason)
// when the matrix was not asked for or the lab does not answer.
func lab(t *testing.T) *faultlab.Env {
	t.Helper()
	envOnce.Do(func() { theEnv, envSkip, envErr = faultlab.SetUp("../..") })
	if envSkip != "" {
		t.Skip(envSkip)
	}
	if envErr != nil {
		t.Fatalf("fault matrix set-up: %v", envErr)
	}
	return theEnv
}

func TestMain(m *testing.M) {
	start := time.Now()
	// Ctrl-C or SIGTERM: the harness runs and stray clients the rows
	// started get the signal (each its own process group) and at most
	// InterruptGrace for their teardown, then SIGKILL; nothing is left.
	stopHandling := faultlab.HandleInterrupts(faultlab.InterruptGrace)
	code := m.Run()
	stopHandling()
	if theEnv != nil && theEnv.CredDir != "" {
		_ = os.RemoveAll(theEnv.CredDir)
	}
	if theEnv != nil && len(matrix.Rows()) > 0 {
		if err := theEnv.WriteMatrix(&matrix, time.Since(start)); err != nil {
			fmt.Fprintln(os.Stderr, "writing the matrix:", err)
			code = 1
		}
	}
	os.Exit(code)
}
