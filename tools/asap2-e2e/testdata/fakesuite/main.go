// Command fakesuite stands for a suite's test binary in the launcher's exec
// test: it prints its pid, waits for SIGTERM (as Ginkgo does, to run the
// teardown) and writes the signal and its arguments into
// $ASAP2E2E_OUTPUT_DIR/terminated. Without a SIGTERM within a minute it
// exits 3.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	fmt.Printf("pid %d\n", os.Getpid())
	select {
	case s := <-ch:
		note := s.String() + "\n" + strings.Join(os.Args[1:], "\n") + "\n"
		if err := os.WriteFile(filepath.Join(os.Getenv("ASAP2E2E_OUTPUT_DIR"), "terminated"), []byte(note), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
	case <-time.After(time.Minute):
		os.Exit(3)
	}
}
