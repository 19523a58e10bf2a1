package hub_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/hub"
)

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  hub.Config
		err  string
	}{
		{"no data dir", hub.Config{}, "data dir is required"},
		{"bad handle", hub.Config{DataDir: "x", OwnerHandle: "Bad Handle"}, "owner handle"},
		{"bad email", hub.Config{DataDir: "x", OwnerEmail: "nope"}, "owner email"},
		{"negative heartbeat", hub.Config{DataDir: "x", HeartbeatTimeout: -1}, "heartbeat"},
		{"negative queue", hub.Config{DataDir: "x", SocketQueue: -1}, "socket queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := hub.New(tt.cfg)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	h, err := hub.New(hub.Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, h.Stop(context.Background()))
	require.NoError(t, h.Stop(context.Background()))
	require.Error(t, h.Start(context.Background()), "a stopped hub does not start")
}

func TestOwnerKey(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *hub.Config) { c.OwnerHandle = "alice" })
	path := filepath.Join(b.cfg.DataDir, "owner.key")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	first := b.owner
	b.call("GET", "/api/v1/me/profile", first, nil, 200, nil)

	b.restart()
	require.Equal(t, first, b.owner, "the key file keeps working")

	// A lost key file gets a fresh key; the user and its rooms stay.
	room := b.room()
	require.NoError(t, os.Remove(path))
	b.restart()
	require.NotEqual(t, first, b.owner)
	require.Equal(t, b.owner, b.ownerKeyFile())
	b.call("GET", "/api/v1/me/chats/"+room, b.owner, nil, 200, nil)
	var prof struct {
		Data struct{ Handle string } `json:"data"`
	}
	b.call("GET", "/api/v1/me/profile", b.owner, nil, 200, &prof)
	require.Equal(t, "alice", prof.Data.Handle)
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- hub.Run(ctx, hub.Config{DataDir: dir}, pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan())
	line := sc.Text()
	require.True(t, strings.HasPrefix(line, "hub listening on http://127.0.0.1:"), line)
	require.True(t, sc.Scan())
	require.Equal(t, "owner key in "+filepath.Join(dir, "owner.key"), sc.Text())
	url, err := os.ReadFile(filepath.Join(dir, hub.URLFile))
	require.NoError(t, err)
	require.Equal(t, strings.TrimPrefix(line, "hub listening on ")+"\n", string(url))

	key, err := os.ReadFile(filepath.Join(dir, "owner.key"))
	require.NoError(t, err)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest("GET", strings.TrimPrefix(line, "hub listening on ")+"/api/v1/me/profile", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", strings.TrimSpace(string(key)))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	cancel()
	_, _ = io.Copy(io.Discard, pr)
	require.NoError(t, <-done)
	_, err = os.Stat(filepath.Join(dir, hub.URLFile))
	require.ErrorIs(t, err, os.ErrNotExist, "the URL file goes with the hub")
}
