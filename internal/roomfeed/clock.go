package roomfeed

import "time"

// Clock is the feed's time source: the flush and membership timers run on
// it, so tests drive them without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless the returned
	// timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call; it reports false if the call already ran or
	// started.
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc implements Clock.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
