// Package config loads jam's configuration from defaults, an optional TOML
// file, JAM_* environment variables and command-line flags, in increasing
// order of precedence, and validates it.
//
// Every key is listed once in the key table (keys.go) with its flag, its
// environment variable and its parser, so the four sources cannot drift
// apart. An unknown key in the file, a value of the wrong type, or a value
// that fails validation is an [*Error] that names the key and where it came
// from, on one line, and wraps [jam.ErrInvalid].
//
// Checks that need the file system (is the data directory writable?) belong
// to the daemon at start, not here: loading configuration has no side
// effects.
package config
