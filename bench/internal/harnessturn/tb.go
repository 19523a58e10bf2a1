package harnessturn

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
)

// fixture is the testing.TB that internal/realagent's constructors take,
// for a run outside a test (jambench): Skip and Fatal end the constructor
// by panicking with a fixtureStop, which prepare recovers; Cleanup
// registers what cleanup runs, last first. Only the methods realagent
// calls are implemented; the embedded nil TB makes any other call panic,
// which a test of this package would show.
type fixture struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func() // guarded by mu
	dirs     int      // guarded by mu
}

// fixtureStop is what Skip and Fatal panic with.
type fixtureStop struct {
	skip bool
	msg  string
}

func (f *fixture) Helper()             {}
func (f *fixture) Name() string        { return "harnessturn" }
func (f *fixture) Failed() bool        { return false }
func (f *fixture) Logf(string, ...any) {}
func (f *fixture) Log(...any)          {}

func (f *fixture) Cleanup(fn func()) {
	f.mu.Lock()
	f.cleanups = append(f.cleanups, fn)
	f.mu.Unlock()
}

func (f *fixture) TempDir() string {
	dir, err := os.MkdirTemp("", "jb-ht")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (f *fixture) Skip(args ...any) { panic(fixtureStop{skip: true, msg: fmt.Sprint(args...)}) }
func (f *fixture) Skipf(format string, args ...any) {
	panic(fixtureStop{skip: true, msg: fmt.Sprintf(format, args...)})
}
func (f *fixture) SkipNow()          { panic(fixtureStop{skip: true}) }
func (f *fixture) Fatal(args ...any) { panic(fixtureStop{msg: fmt.Sprint(args...)}) }
func (f *fixture) Fatalf(format string, args ...any) {
	panic(fixtureStop{msg: fmt.Sprintf(format, args...)})
}
func (f *fixture) FailNow()                  { panic(fixtureStop{msg: "failed"}) }
func (f *fixture) Error(args ...any)         { f.Fatal(args...) }
func (f *fixture) Errorf(s string, a ...any) { f.Fatalf(s, a...) }

// close runs the cleanups, last registered first.
func (f *fixture) close() {
	f.mu.Lock()
	fns := slices.Clone(f.cleanups)
	f.cleanups = nil
	f.mu.Unlock()
	for _, fn := range slices.Backward(fns) {
		fn()
	}
}

// errSkipped says a harness's CLI is not installed.
var errSkipped = errors.New("not installed")

// guard runs fn, turning a Skip into errSkipped (with its reason) and a
// Fatal into an error.
func guard(fn func()) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		stop, ok := r.(fixtureStop)
		if !ok {
			panic(r)
		}
		if stop.skip {
			err = fmt.Errorf("%w: %s", errSkipped, stop.msg)
		} else {
			err = errors.New(stop.msg)
		}
	}()
	fn()
	return nil
}
