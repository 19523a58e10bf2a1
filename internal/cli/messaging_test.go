package cli_test

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMessaging_notRunning runs each messaging command on a data directory
// no daemon serves.
func TestMessaging_notRunning(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
	}{
		{name: "account add", args: []string{"account", "add", "--band", "https://b", "--key", "k"}},
		{name: "account list", args: []string{"account", "list"}},
		{name: "agent add", args: []string{"agent", "add", "alice"}},
		{name: "agent list", args: []string{"agent", "list"}},
		{name: "room create", args: []string{"room", "create", "t"}},
		{name: "room list", args: []string{"room", "list"}},
		{name: "room add", args: []string{"room", "add", "r", "a"}},
		{name: "bind", args: []string{"bind", "r", "--agent", "a"}},
		{name: "unbind", args: []string{"unbind", "b"}},
		{name: "inbox", args: []string{"inbox"}},
		{name: "wait", args: []string{"wait"}},
		{name: "reply", args: []string{"reply", "m", "t"}},
		{name: "ack", args: []string{"ack", "m"}},
		{name: "send", args: []string{"send", "r", "t"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := noDaemon(t)
			r := b.jam(t, tc.args...)
			require.Equal(t, 3, r.code)
			require.Empty(t, r.stdout)
			socket := filepath.Join(b.dataDir, "jamd.sock")
			require.Regexp(t, "^jam: jamd is not running \\(no daemon answers on "+regexp.QuoteMeta(socket)+"\\)\n$", r.stderr)
		})
	}
}

// TestMessaging_help checks that every messaging command is registered.
func TestMessaging_help(t *testing.T) {
	t.Parallel()
	r := noDaemon(t).jam(t, "--help")
	require.Equal(t, 0, r.code)
	for _, name := range []string{"account", "agent", "room", "bind", "unbind", "inbox", "wait", "reply", "ack", "send"} {
		require.Regexp(t, "(?m)^  "+name+" +\\S", r.stdout)
	}
}
