// Package cli implements the jam and jamd command lines.
//
// Each command lives in its own file with its options struct, its cobra
// constructor and its run function. Commands reach the daemon only through
// package apiclient; "jam up" runs the daemon in the foreground through a
// function the main package injects, so this package never imports the
// daemon. exit.go is the one place where errors become exit codes.
//
// "jam changeset apply" is the one command that works on the person's
// files itself: it runs git apply through package git (hardened: nothing
// the directory's configuration names runs) in the directory the person
// names, and checks the result against the manifest with wire types only,
// since the CLI links neither the store nor the changeset package.
//
// Output: every command that prints data takes --json and then prints one
// JSON document on stdout. Errors go to stderr as one line, "jam: …".
package cli
