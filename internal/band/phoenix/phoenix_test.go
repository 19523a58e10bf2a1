package phoenix_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/band/phoenix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		want    phoenix.Frame
		wantErr string
	}{
		{name: "join", in: `["1","1","agent_rooms:a","phx_join",{}]`, want: phoenix.Frame{JoinRef: phoenix.Ref("1"), Ref: phoenix.Ref("1"), Topic: "agent_rooms:a", Event: "phx_join", Payload: json.RawMessage(`{}`)}},
		{name: "heartbeat", in: `[null,"7","phoenix","heartbeat",{}]`, want: phoenix.Frame{Ref: phoenix.Ref("7"), Topic: "phoenix", Event: "heartbeat", Payload: json.RawMessage(`{}`)}},
		{name: "push", in: ` ["3", null, "chat_room:r", "message_created", {"id":"x"}] `, want: phoenix.Frame{JoinRef: phoenix.Ref("3"), Topic: "chat_room:r", Event: "message_created", Payload: json.RawMessage(`{"id":"x"}`)}},
		{name: "numeric refs", in: `[3,4,"t","e",{}]`, want: phoenix.Frame{JoinRef: phoenix.Ref("3"), Ref: phoenix.Ref("4"), Topic: "t", Event: "e", Payload: json.RawMessage(`{}`)}},
		{name: "not json", in: `hello`, wantErr: "want a JSON array"},
		{name: "object", in: `{"topic":"t"}`, wantErr: "want a JSON array"},
		{name: "v1 short", in: `["t","e",{}]`, wantErr: "want 5 elements, got 3"},
		{name: "six", in: `[null,null,"t","e",{},1]`, wantErr: "want 5 elements, got 6"},
		{name: "empty topic", in: `[null,null,"","e",{}]`, wantErr: "topic must be 1 to"},
		{name: "numeric topic", in: `[null,null,1,"e",{}]`, wantErr: "topic must be a string"},
		{name: "bool ref", in: `[true,null,"t","e",{}]`, wantErr: "join_ref must be a string or null"},
		{name: "float ref", in: `[1.5,null,"t","e",{}]`, wantErr: "join_ref must be a string or null"},
		{name: "long event", in: `[null,null,"t","` + strings.Repeat("e", 300) + `",{}]`, wantErr: "event must be 1 to 256"},
		{name: "invalid utf8", in: "[null,null,\"t\xff\",\"e\",{}]", wantErr: "not valid UTF-8"},
		{name: "oversize", in: `[null,null,"t","e","` + strings.Repeat("x", phoenix.MaxFrameBytes) + `"]`, wantErr: "exceeds"},
		{name: "truncated", in: `[null,null,"t","e",{`, wantErr: "want a JSON array"},
		{name: "100k nested arrays", in: strings.Repeat("[", 100000) + strings.Repeat("]", 100000), wantErr: "exceeded max depth"},
		{name: "nested payload", in: `[null,null,"t","e",` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `]`, wantErr: "exceeded max depth"},
		{name: "raw control character", in: "[null,null,\"t\x1b\",\"e\",{}]", wantErr: "invalid character"},
		{name: "escaped control character", in: `[null,null,"t\u001b","e",{}]`, want: phoenix.Frame{Topic: "t\x1b", Event: "e", Payload: json.RawMessage(`{}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := phoenix.Decode([]byte(tc.in))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, phoenix.ErrMalformed)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEncode(t *testing.T) {
	t.Parallel()
	b, err := phoenix.Frame{JoinRef: phoenix.Ref("1"), Topic: "chat_room:r", Event: "message_created", Payload: json.RawMessage(`{"a":1}`)}.Encode()
	require.NoError(t, err)
	require.Equal(t, `["1",null,"chat_room:r","message_created",{"a":1}]`, string(b))

	b, err = phoenix.Frame{Topic: "phoenix", Event: "heartbeat", Ref: phoenix.Ref("9")}.Encode()
	require.NoError(t, err)
	require.Equal(t, `[null,"9","phoenix","heartbeat",{}]`, string(b))

	_, err = phoenix.Frame{Topic: "", Event: "e"}.Encode()
	require.ErrorIs(t, err, phoenix.ErrMalformed)
	_, err = phoenix.Frame{Topic: "t", Event: "e", Payload: json.RawMessage(`{`)}.Encode()
	require.ErrorIs(t, err, phoenix.ErrMalformed)
}

func TestReplyFrame(t *testing.T) {
	t.Parallel()
	in, err := phoenix.Decode([]byte(`["5","6","chat_room:r","phx_join",{}]`))
	require.NoError(t, err)
	out, err := phoenix.ReplyFrame(in, phoenix.StatusError, map[string]string{"reason": "unauthorized"})
	require.NoError(t, err)
	b, err := out.Encode()
	require.NoError(t, err)
	require.Equal(t, `["5","6","chat_room:r","phx_reply",{"status":"error","response":{"reason":"unauthorized"}}]`, string(b))

	out, err = phoenix.ReplyFrame(in, phoenix.StatusOK, nil)
	require.NoError(t, err)
	var r phoenix.Reply
	require.NoError(t, json.Unmarshal(out.Payload, &r))
	require.JSONEq(t, `{}`, string(r.Response))
}

func FuzzDecode(f *testing.F) {
	f.Add(`["1","1","agent_rooms:a","phx_join",{}]`)
	f.Add(`[null,"7","phoenix","heartbeat",{}]`)
	f.Add(`["3",null,"chat_room:r","message_created",{"id":"x","metadata":{"mentions":[]}}]`)
	f.Add(`[1,2,"t","e",[]]`)
	f.Add(`[[[[[[[[`)
	f.Fuzz(func(t *testing.T, in string) {
		fr, err := phoenix.Decode([]byte(in))
		if err != nil {
			if !errors.Is(err, phoenix.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		out, err := fr.Encode()
		if err != nil {
			t.Fatalf("decoded frame does not encode: %v", err)
		}
		again, err := phoenix.Decode(out)
		if err != nil {
			t.Fatalf("re-decode of %q: %v", out, err)
		}
		if phoenix.RefString(again.JoinRef) != phoenix.RefString(fr.JoinRef) || again.Topic != fr.Topic || again.Event != fr.Event {
			t.Fatalf("round trip changed the frame: %+v vs %+v", fr, again)
		}
	})
}
