package offload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Guests of the recorded software-path session (testdata/record-software-path.sh).
const (
	recMAC1 = "02:00:c6:12:d2:01"
	recMAC2 = "02:00:c6:12:d2:02"
)

// Guests of the mlx5 VF tunnel example (testdata/README.md, source [mlx5-vf-tunnel]).
const (
	mlxMACLocal  = "ca:2e:a7:3f:f5:0f"
	mlxMACRemote = "0a:40:bd:30:89:99"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return b
}

// fakeRunner answers commands from a script: each command has a queue of
// results, the last one repeats.
type fakeRunner struct {
	results map[string][]remote.Result
	calls   []string
	err     error // transport error for every Run
}

func (f *fakeRunner) Name() string { return "fake-hv" }

func (f *fakeRunner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	f.calls = append(f.calls, cmd)
	if err := ctx.Err(); err != nil {
		return remote.Result{Cmd: cmd, ExitCode: -1}, err
	}
	if f.err != nil {
		return remote.Result{Cmd: cmd, ExitCode: -1}, f.err
	}
	q := f.results[cmd]
	if len(q) == 0 {
		return remote.Result{Target: f.Name(), Cmd: cmd, ExitCode: 127, Stderr: []byte("fake: unexpected command: " + cmd)}, nil
	}
	r := q[0]
	if len(q) > 1 {
		f.results[cmd] = q[1:]
	}
	r.Cmd, r.Target = cmd, f.Name()
	return r, nil
}

func (f *fakeRunner) Start(ctx context.Context, cmd string) (remote.Process, error) {
	return nil, errors.New("fake runner: Start not supported")
}

func ok(stdout []byte) remote.Result { return remote.Result{Stdout: stdout} }

// expectVerdict fails the test unless the verdict is want and its reason
// contains every one of reasons.
func expectVerdict(t *testing.T, name string, v results.Verdict, why string, want results.Verdict, reasons ...string) {
	t.Helper()
	if v != want {
		t.Errorf("%s: got %s %q, want %s", name, v, why, want)
		return
	}
	for _, r := range reasons {
		if !strings.Contains(why, r) {
			t.Errorf("%s: reason %q lacks %q", name, why, r)
		}
	}
}
