package daemon

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/config"
)

// TestLoggerKeysOnce: a key given again replaces the earlier value, in
// place, at its group level; a nil-valued attribute is left out.
func TestLoggerKeysOnce(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := newLogger(config.Config{LogLevel: "debug", LogFormat: "text"}, &buf)
	hub := log.With("component", "hub", "url", "u")
	hub.Info("listening", "component", "hub2", "err", nil, "n", 1)
	var noErr error
	hub.With("err", noErr).Info("state", "state", "up")
	hub.Warn("failed", "err", errors.New("boom"))
	hub.WithGroup("g").With("component", "inner").Info("grouped", "component", "x")
	log.Info("plain")

	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	require.Len(t, lines, 5)
	tail := func(l string) string { return l[strings.Index(l, " level="):] }
	require.Equal(t, ` level=INFO msg=listening component=hub2 url=u n=1`, tail(lines[0]))
	require.Equal(t, ` level=INFO msg=state component=hub url=u state=up`, tail(lines[1]))
	require.Equal(t, ` level=WARN msg=failed component=hub url=u err=boom`, tail(lines[2]))
	require.Equal(t, ` level=INFO msg=grouped component=hub url=u g.component=x`, tail(lines[3]))
	require.Equal(t, ` level=INFO msg=plain component=jamd`, tail(lines[4]))

	buf.Reset()
	log = newLogger(config.Config{LogLevel: "info", LogFormat: "json"}, &buf)
	log.With("component", "feeds").Debug("hidden")
	log.With("component", "feeds").Info("socket", "err", nil)
	require.Equal(t, `"level":"INFO","msg":"socket","component":"feeds"}`+"\n", buf.String()[strings.Index(buf.String(), `"level"`):])
}
