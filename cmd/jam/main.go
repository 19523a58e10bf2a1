// Command jam is jam's command line. "jam up" runs the daemon in the
// foreground; the other commands talk to a running daemon.
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
	os.Exit(cli.Main(ctx, os.Args[1:], cli.System(), cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub, RunDemoAgent: daemon.RunDemoAgent, CopyStore: daemon.CopyStore}))
}
