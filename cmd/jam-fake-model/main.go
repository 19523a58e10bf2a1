// Command jam-fake-model serves a scripted model on loopback (OpenAI Chat
// Completions and Responses, Anthropic Messages), for running agent CLIs
// against a fake model.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/jamhq/jam/internal/fakemodel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := fakemodel.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
