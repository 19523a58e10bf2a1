package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// TestHelp_boolFlagsPlain: every command's help (jam's and jamd's) shows
// a boolean flag as --json, never pflag's --json[=true|false], and keeps
// the flag's line.
func TestHelp_boolFlagsPlain(t *testing.T) {
	t.Parallel()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(newRootCmd(&IOStreams{}, Deps{}), nil)
	require.Greater(t, len(paths), 20)
	help := func(main func([]string, *IOStreams) int, args []string) string {
		var out bytes.Buffer
		code := main(append(args, "--help"), &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		require.Equal(t, 0, code, "%v: %s", args, out.String())
		return out.String()
	}
	jam := func(args []string, io *IOStreams) int { return Main(t.Context(), args, io, Deps{}) }
	jamd := func(args []string, io *IOStreams) int { return MainDaemon(t.Context(), args, io, Deps{}) }
	for _, p := range paths {
		out := help(jam, p)
		require.NotContains(t, out, "[=true|false]", "jam %v", p)
		require.Regexp(t, `(?m)^  -h, --help +help for `, out, "jam %v", p)
	}
	out := help(jamd, nil)
	require.NotContains(t, out, "[=true|false]", "jamd")
	require.Regexp(t, `(?m)^      --demo +also set up the demo agent`, out)
}

// TestJSON_everyDataCommand: every command that prints data takes
// --json; the ones without print a confirmation line only, run a server
// in the foreground, or are cobra's own.
func TestJSON_everyDataCommand(t *testing.T) {
	t.Parallel()
	noData := map[string]bool{
		"jam ack": true, "jam unbind": true, "jam room add": true, "jam turn cancel": true, // a confirmation line
		"jam up": true, "jam hub": true, "jam demo-agent": true, // servers in the foreground
		"jam help": true, "jam completion": true,
		"jam changeset diff": true, // a patch, byte for byte: its JSON is jam changeset show --json
	}
	var lacking []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			for _, sub := range c.Commands() {
				walk(sub)
			}
			return
		}
		if c.Flags().Lookup("json") == nil && !noData[c.CommandPath()] && !strings.HasPrefix(c.CommandPath(), "jam completion") {
			lacking = append(lacking, c.CommandPath())
		}
	}
	root := newRootCmd(&IOStreams{}, Deps{})
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	walk(root)
	require.Empty(t, lacking, "commands that print data without --json")
}

// TestUsageArgs: completion reads a command's positional placeholders
// from its usage line, up to the first optional or flag part.
func TestUsageArgs(t *testing.T) {
	t.Parallel()
	for use, want := range map[string][]string{
		"show ROOM [--limit N] [--account P]": {"ROOM"},
		"add ROOM AGENT [--repo PATH]":        {"ROOM", "AGENT"},
		"config AGENT KEY=VALUE...":           {"AGENT", "KEY=VALUE"},
		"bind ROOM --agent A [--alias X]":     {"ROOM"},
		"list":                                nil,
		"":                                    nil,
	} {
		require.Equal(t, want, usageArgs(use), use)
	}
}
