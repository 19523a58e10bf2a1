package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/demoagent"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/store"
)

// RunDemoAgent serves "jam demo-agent" on the process's stdio.
func RunDemoAgent(ctx context.Context, opts cli.DemoAgentOptions) error {
	return demoagent.Run(ctx, demoagent.Config{StateDir: opts.StateDir}, os.Stdin, os.Stdout)
}

// staleDemoCommand reports whether an ACP command is jam's demo agent at
// a path that no longer runs: the executable is gone, or it lies in a Go
// build cache ("go run" builds there, and the cache is trimmed and
// cleaned). Such commands were stored before the demo kind.
func staleDemoCommand(cfg store.TemplateConfig) bool {
	if cfg.Harness != "acp" || len(cfg.Command) != 2 || cfg.Command[1] != "demo-agent" || !filepath.IsAbs(cfg.Command[0]) {
		return false
	}
	exe := cfg.Command[0]
	if slices.Contains(strings.Split(filepath.ToSlash(exe), "/"), "go-build") {
		return true
	}
	_, err := os.Stat(exe)
	return err != nil
}

// repairDemoAgents moves every agent whose stored command is a stale
// path to jam's demo agent onto the demo kind, which jamd runs from its
// own executable at each launch. It runs at start, before any agent is
// launched; the change is recorded as any configuration change is.
func (d *daemon) repairDemoAgents(ctx context.Context) error {
	ts, err := d.store.TemplateList(ctx, d.workspace.ID)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if !staleDemoCommand(t.Desired) {
			continue
		}
		c := t.Desired
		k, _ := harness.KindOf(demoHarness.Name())
		c.Harness, c.Command = k.Name, slices.Clone(k.Builtin) // as agentconf.Validate stores it
		if _, err := d.store.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: d.workspace.ID, ID: t.ID, Desired: c,
			Change: "harness=demo (the demo agent's stored command is gone)", At: time.Now()}); err != nil {
			return fmt.Errorf("repair demo agent %s: %w", t.Peer, err)
		}
		d.log.Info("demo agent now runs from jamd's own executable", "agent", t.Peer.String(), "was", strings.Join(t.Desired.Command, " "))
	}
	return nil
}
