package fakemodel_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/fakemodel"
)

// lockedBuffer is written by Main while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMain_servesItsScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"replies":[{"text":["from the script"]}]}`), 0o644))
	ctx, cancel := context.WithCancel(t.Context())
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	code := make(chan int, 1)
	go func() { code <- fakemodel.Main(ctx, []string{"--script", script}, out, errOut) }()
	var url string
	require.Eventually(t, func() bool {
		u, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "listening on ")
		url = u
		return ok
	}, 30e9, 5e6)
	res, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body(false, "x", bashTool)))
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(b), "from the script")
	// The same server speaks Anthropic Messages at its root.
	res, err = http.Post(strings.TrimSuffix(url, "/v1")+"/v1/messages", "application/json", strings.NewReader(messagesBody(false, "hello", bashToolAnthropic, "")))
	require.NoError(t, err)
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(b), "FAKE-REPLY: hello")
	require.Contains(t, errOut.String(), "Anthropic base URL "+strings.TrimSuffix(url, "/v1"))
	cancel()
	require.Equal(t, 0, <-code)
	require.Contains(t, errOut.String(), "fake model: request")
	http.DefaultClient.CloseIdleConnections()
}

func TestMain_badUsage(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"replies":[{"status":200}]}`), 0o644))
	for name, args := range map[string][]string{
		"unknown flag":   {"--nope"},
		"extra argument": {"serve"},
		"missing script": {"--script", filepath.Join(t.TempDir(), "none.json")},
		"invalid script": {"--script", bad},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 2, fakemodel.Main(t.Context(), args, &out, &errOut), name)
		require.NotEmpty(t, errOut.String(), name)
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 1, fakemodel.Main(t.Context(), []string{"--addr", "256.0.0.1:0"}, &out, &errOut))
	require.Equal(t, 0, fakemodel.Main(t.Context(), []string{"--help"}, &out, &errOut))
}
