// Package cli holds the one command-line convention every command under
// tools/ follows (Go's flag convention): -h / --help prints the usage on
// standard output and exits 0; a wrong flag prints the error and the usage on
// standard error and exits 2.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args with fs. When done is true the command exits with code:
// 0 after -h/-help/--help (usage on stdout), 2 after a bad flag (the error,
// then the usage, on stderr). fs.Usage must print to fs.Output().
func Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (done bool, code int) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case err == nil:
		fs.SetOutput(stderr)
		return false, 0
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return true, 0
	}
	fs.SetOutput(stderr)
	fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	fs.Usage()
	return true, 2
}

// IsHelp reports whether arg asks for help, for commands whose first
// argument is a subcommand.
func IsHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
