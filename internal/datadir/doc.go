// Package datadir prepares jam's data directory and guards it with an
// exclusive lock, so that exactly one daemon owns one data directory.
//
// The lock is an flock(2) on "jamd.lock" inside the directory. The kernel
// drops it when the process dies, however it dies, so a crashed daemon never
// leaves a stale lock behind and no PID-liveness guessing is needed. The
// holder writes its PID into the file only to name itself in the error a
// second daemon prints.
package datadir
