package fakemodel

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Main is the jam-fake-model command: it serves until ctx ends and
// returns the exit code (0, or 2 for bad usage, 1 when it cannot start).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jam-fake-model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	scriptFile := fs.String("script", "", "JSON script of replies: {\"replies\":[{\"text\":[…]},{\"tool_call\":{\"name\":\"bash\",\"arguments\":{…}}},{\"status\":500},{\"delay\":\"1s\",…}]}")
	model := fs.String("model", DefaultModel, "model id listed by /v1/models")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: jam-fake-model [--addr HOST:PORT] [--script FILE] [--model ID]")
		fmt.Fprintln(stderr, "Serves a scripted model on OpenAI Chat Completions (/v1/chat/completions), OpenAI Responses (/v1/responses)")
		fmt.Fprintln(stderr, "and Anthropic Messages (/v1/messages); requests without a scripted reply get an echo.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jam-fake-model: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var script Script
	if *scriptFile != "" {
		b, err := os.ReadFile(*scriptFile)
		if err == nil {
			script, err = ParseScript(b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "jam-fake-model: %v\n", err)
			return 2
		}
	}
	s := New(Config{Addr: *addr, Script: script, Model: *model, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err := s.Start(); err != nil {
		fmt.Fprintf(stderr, "jam-fake-model: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "listening on %s\n", s.URL())
	fmt.Fprintf(stderr, "OpenAI base URL %s; Anthropic base URL %s\n", s.URL(), s.Root())
	<-ctx.Done()
	s.Stop()
	return 0
}
