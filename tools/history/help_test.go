package main

import (
	"io"
	"testing"

	"github.com/mosk-qa/asap2-e2e/tools/internal/cli/clitest"
)

func TestHelpAndBadFlag(t *testing.T) { clitest.HelpConvention(t, run) }

// Each subcommand answers -h the same way (a store is opened first).
func TestSubcommandHelp(t *testing.T) {
	db := t.TempDir() + "/h.db"
	for _, sub := range []string{"ingest", "show", "check", "ack", "trend"} {
		clitest.HelpConvention(t, func(args []string, stdout, stderr io.Writer) int {
			return run(append([]string{"--store", db, sub}, args...), stdout, stderr)
		})
	}
}
