package framework

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
)

// ExpectNoError fails the spec when err is not nil, with one readable
// sentence: what was being done, then the error's own message chain
// ("running TCP 1 stream: tcp-p1 repeat 1: … iperf3 reported: …"). Gomega's
// HaveOccurred/Succeed would print the error's Go structure as well
// (`<*fmt.wrapError | 0x…>` with every nested field), which buries the
// sentence a release engineer needs.
func ExpectNoError(err error, doing string, args ...any) {
	GinkgoHelper()
	if err != nil {
		Fail(Explain(err, doing, args...))
	}
}

// Explain is the failure sentence of ExpectNoError: "doing: message", the
// lines of a joined error indented under it.
func Explain(err error, doing string, args ...any) string {
	what := fmt.Sprintf(doing, args...)
	if err == nil {
		return what
	}
	msg := strings.TrimSpace(err.Error())
	if strings.Contains(msg, "\n") {
		return what + ":\n  " + strings.ReplaceAll(msg, "\n", "\n  ")
	}
	return what + ": " + msg
}
