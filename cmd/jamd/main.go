// Command jamd is the jam daemon.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/daemon"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, a second one kills the process at once.
	context.AfterFunc(ctx, stop)
	os.Exit(cli.MainDaemon(ctx, os.Args[1:], cli.System(), cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub}))
}
