package main

import (
	"context"
	"io"
	"testing"

	"github.com/mosk-qa/asap2-e2e/tools/internal/cli/clitest"
)

func TestHelpAndBadFlag(t *testing.T) {
	clitest.HelpConvention(t, func(args []string, stdout, stderr io.Writer) int {
		return run(context.Background(), args, stdout, stderr, nil)
	})
}
