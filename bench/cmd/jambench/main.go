// Command jambench runs jam's benchmarks on this machine, each beside its
// baseline, and prints the table; see BENCHMARKS.md. Run it from the
// repository root with `go -C bench run ./cmd/jambench`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/jamhq/jam/bench/internal/suite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := suite.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
