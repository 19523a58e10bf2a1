// Package datadir prepares jam's data directory and guards it with an
// exclusive lock, so that exactly one daemon owns one data directory.
//
// The directory is mode 0700, whoever made it: Prepare tightens one that
// is open to group or others. The control socket is bound under a umask
// of 077 (ListenUnix), so it is mode 0600 from its first instant.
//
// The lock is an flock(2) on "jamd.lock" inside the directory. The kernel
// drops it when the process dies, however it dies, so a crashed daemon never
// leaves a stale lock behind and no PID-liveness guessing is needed. The
// holder writes its PID into the file only to name itself in the error a
// second daemon prints.
package datadir
