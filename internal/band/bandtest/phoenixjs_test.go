package bandtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/bandtest"
)

// jsLine is one JSON line of test/phoenixjs/check.mjs.
type jsLine struct {
	Event            string  `json:"event"`
	Step             string  `json:"step"`
	Message          string  `json:"message"`
	OK               bool    `json:"ok"`
	MessageID        string  `json:"message_id"`
	SenderID         string  `json:"sender_id"`
	Content          string  `json:"content"`
	MessageType      string  `json:"message_type"`
	PushJoinRef      *string `json:"push_join_ref"`
	PushRef          *string `json:"push_ref"`
	ChannelJoinRef   *string `json:"channel_join_ref"`
	HeartbeatReplies int     `json:"heartbeat_replies"`
	PhoenixVsn       string  `json:"phoenix_vsn"`
}

// TestPhoenixJS checks the hub's WebSocket with the official Phoenix
// JavaScript client (test/phoenixjs/check.mjs), an implementation of the
// protocol that shares nothing with jam. It synchronises on the script's
// output lines: the message is posted once the script has joined.
func TestPhoenixJS(t *testing.T) {
	t.Parallel()
	// CI sets JAM_REQUIRE_PHOENIXJS so a missing install fails instead of
	// skipping quietly.
	skip := t.Skip
	if os.Getenv("JAM_REQUIRE_PHOENIXJS") != "" {
		skip = t.Fatal
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not on PATH; install Node.js 20+ and run `npm ci --prefix test/phoenixjs` to check the hub with phoenix.js")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "test", "phoenixjs"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "phoenix")); err != nil {
		skip("phoenix.js is not installed; run `npm ci --prefix test/phoenixjs` from the repository root")
	}

	f := bandtest.NewFixture(t, startHub(t))
	a := f.RegisterAgent(t, "phoenixjs")
	room := f.CreateRoom(t, "phoenixjs")
	f.AddParticipant(t, room, a.ID)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the script gives up after 20 s itself
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs", "--url", f.URL(), "--key", a.Key, "--agent", a.ID, "--room", room)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := false
	defer func() {
		if !waited {
			cancel()
			_ = cmd.Wait()
		}
	}()

	var lines []jsLine
	var raw []string
	posted := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		raw = append(raw, sc.Text())
		var l jsLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "check.mjs printed a line that is not JSON: %q", sc.Text())
		lines = append(lines, l)
		if l.Event == "joined" && posted == "" {
			posted = f.Post(t, room, "@"+a.Handle+" hello from Go", bandtest.Mention{ID: a.ID})
		}
	}
	require.NoError(t, sc.Err())
	waited = true
	err = cmd.Wait()
	transcript := strings.Join(raw, "\n") + "\nstderr: " + stderr.String()
	require.NoError(t, err, "check.mjs failed:\n%s", transcript)

	var events []string
	for _, l := range lines {
		events = append(events, l.Event)
	}
	require.Equal(t, []string{"open", "joined", "message", "heartbeat", "left", "result"}, events, "check.mjs progress:\n%s", transcript)
	res := lines[len(lines)-1]
	require.True(t, res.OK, transcript)
	require.NotEmpty(t, posted)
	require.Equal(t, posted, res.MessageID, "the pushed message")
	require.Equal(t, f.Owner.ID, res.SenderID, "sender_id")
	require.Equal(t, "text", res.MessageType, "message_type")
	require.Contains(t, res.Content, "@[["+a.ID+"]]", "content mentions the agent")
	require.Nil(t, res.PushRef, "a push has ref null")
	require.NotNil(t, res.PushJoinRef, "a push carries the channel's join_ref, not null")
	require.NotNil(t, res.ChannelJoinRef)
	require.Equal(t, *res.ChannelJoinRef, *res.PushJoinRef, "push join_ref")
	require.GreaterOrEqual(t, res.HeartbeatReplies, 1, "heartbeat replies")
	require.Equal(t, "2.0.0", res.PhoenixVsn)
}
