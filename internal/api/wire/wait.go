package wire

import "time"

// Bounds of POST /v1/waitInbox: a WaitRequest with TimeoutMS 0 waits
// DefaultWait; the server refuses a negative timeout or one over MaxWait.
const (
	DefaultWait = 30 * time.Second
	MaxWait     = 10 * time.Minute
)
