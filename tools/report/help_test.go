package main

import (
	"testing"

	"github.com/mosk-qa/asap2-e2e/tools/internal/cli/clitest"
)

func TestHelpAndBadFlag(t *testing.T) { clitest.HelpConvention(t, run) }
