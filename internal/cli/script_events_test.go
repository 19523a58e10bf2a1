package cli_test

import (
	"os"
	"regexp"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdWaitMatch waits until a file that another process writes holds a
// line matching a regular expression, failing the script after the bound.
// The writer is another process, so there is nothing to wait on but the
// file: poll it.
//
//	waitmatch PATH REGEXP BOUND
func cmdWaitMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitmatch PATH REGEXP BOUND")
	}
	path := ts.MkAbs(args[0])
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	bound, err := time.ParseDuration(args[2])
	ts.Check(err)
	deadline := time.Now().Add(bound)
	for {
		if raw, err := os.ReadFile(path); err == nil && re.Match(raw) {
			return
		}
		if time.Now().After(deadline) {
			raw, _ := os.ReadFile(path)
			ts.Fatalf("%s has no line matching %q within %s; it holds:\n%s", path, args[1], bound, raw)
		}
		time.Sleep(20 * time.Millisecond) // polling another process; nothing to wait on
	}
}
