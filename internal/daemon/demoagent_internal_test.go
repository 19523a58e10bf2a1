package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store"
)

// TestStaleDemoCommand: the demo agent stored as a path is repaired when
// that path is gone or in a Go build cache; a jam that is still there,
// another agent or the demo kind itself are left as they are.
func TestStaleDemoCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	there := filepath.Join(dir, "jam")
	require.NoError(t, os.WriteFile(there, []byte("#!/bin/sh\n"), 0o755))
	for _, tc := range []struct {
		cfg  store.TemplateConfig
		want bool
	}{
		{store.TemplateConfig{Harness: "acp", Command: []string{filepath.Join(dir, "gone"), "demo-agent"}}, true},
		{store.TemplateConfig{Harness: "acp", Command: []string{there, "demo-agent"}}, false},
		{store.TemplateConfig{Harness: "acp", Command: []string{"/root/.cache/go-build/5a/5a0d-d/jam", "demo-agent"}}, true},
		{store.TemplateConfig{Harness: "acp", Command: []string{"jam", "demo-agent"}}, false},
		{store.TemplateConfig{Harness: "acp", Command: []string{filepath.Join(dir, "gone"), "demo-agent", "--state-dir", "s"}}, false},
		{store.TemplateConfig{Harness: "acp", Command: []string{filepath.Join(dir, "gone"), "serve"}}, false},
		{store.TemplateConfig{Harness: "opencode", Command: []string{filepath.Join(dir, "gone"), "demo-agent"}}, false},
		{store.TemplateConfig{Harness: "demo", Command: []string{"demo-agent"}}, false},
	} {
		require.Equal(t, tc.want, staleDemoCommand(tc.cfg), "%v", tc.cfg)
	}
}

// TestBuiltinCommand: the demo kind runs jamd's executable as it is at
// the launch; other kinds keep their command.
func TestBuiltinCommand(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	c, err := builtinCommand(store.TemplateConfig{Harness: "demo", Command: []string{"demo-agent"}})
	require.NoError(t, err)
	require.Equal(t, []string{exe, "demo-agent"}, c.Command)
	c, err = builtinCommand(store.TemplateConfig{Harness: "acp", Command: []string{"x", "y"}})
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y"}, c.Command)
}
