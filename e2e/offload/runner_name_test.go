package offload

import (
	"context"
	"errors"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// A failure names its target once: the remote runners already begin their
// errors with it ("tc check on hypervisor compute1 (…): hypervisor
// compute1 (…): …" read as two places).
func TestOnTargetNamesTheTargetOnce(t *testing.T) {
	r := namedRunner("hypervisor compute1 (198.18.0.11)")
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"tc check", errors.New(`hypervisor compute1 (198.18.0.11): "tc -s filter" did not finish`),
			`tc check: hypervisor compute1 (198.18.0.11): "tc -s filter" did not finish`},
		{"tc check", errors.New("connection refused"),
			"tc check on hypervisor compute1 (198.18.0.11): connection refused"},
		{"", errors.New(`hypervisor compute1 (198.18.0.11): "ip link" failed`),
			`hypervisor compute1 (198.18.0.11): "ip link" failed`},
		{"", errors.New("EOF"), "on hypervisor compute1 (198.18.0.11): EOF"},
		// a prefix of another target's name is not this target's name
		{"dpctl check", errors.New("hypervisor compute1 (198.18.0.110): x"),
			"dpctl check on hypervisor compute1 (198.18.0.11): hypervisor compute1 (198.18.0.110): x"},
	} {
		got := onTarget(c.what, r, c.err)
		if got.Error() != c.want || !errors.Is(got, c.err) {
			t.Errorf("onTarget(%q, %q)\n got  %s\n want %s", c.what, c.err, got, c.want)
		}
	}
}

type namedRunner string

func (n namedRunner) Name() string { return string(n) }
func (n namedRunner) Run(context.Context, string) (remote.Result, error) {
	return remote.Result{}, errors.New("unused")
}
func (n namedRunner) Start(context.Context, string) (remote.Process, error) {
	return nil, errors.New("unused")
}
