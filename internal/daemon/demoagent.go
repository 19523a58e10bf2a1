package daemon

import (
	"context"
	"os"

	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/demoagent"
)

// RunDemoAgent serves "jam demo-agent" on the process's stdio.
func RunDemoAgent(ctx context.Context, opts cli.DemoAgentOptions) error {
	return demoagent.Run(ctx, demoagent.Config{StateDir: opts.StateDir}, os.Stdin, os.Stdout)
}
