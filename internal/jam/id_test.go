package jam_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestParseID(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(nil, nil)
	good := jam.New[jam.SessionID](m)
	cases := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "minted", in: string(good)},
		{name: "zero body", in: "sess_00000000000000000000000000"},
		{name: "max body", in: "sess_7zzzzzzzzzzzzzzzzzzzzzzzzz"},
		{name: "empty", in: "", wantErr: `lacks the prefix "sess_"`},
		{name: "no prefix", in: strings.TrimPrefix(string(good), "sess_"), wantErr: `lacks the prefix "sess_"`},
		{name: "wrong prefix", in: "turn_" + strings.TrimPrefix(string(good), "sess_"), wantErr: `has prefix "turn_", want "sess_"`},
		{name: "upper case", in: "sess_" + strings.ToUpper(strings.TrimPrefix(string(good), "sess_")), wantErr: "Crockford"},
		{name: "short", in: "sess_0123", wantErr: "want 26 characters"},
		{name: "long", in: string(good) + "0", wantErr: "want 26 characters"},
		{name: "excluded letter", in: "sess_0000000000000000000000000u", wantErr: "Crockford"},
		{name: "overflow", in: "sess_80000000000000000000000000", wantErr: "overflows"},
		{name: "unicode", in: "sess_é000000000000000000000000", wantErr: "Crockford"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := jam.ParseID[jam.SessionID](tc.in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, tc.wantErr)
				require.Empty(t, id)
				return
			}
			require.NoError(t, err)
			require.Equal(t, jam.SessionID(tc.in), id)
		})
	}
}

func TestMinter_sortsInMintingOrder(t *testing.T) {
	t.Parallel()
	// A frozen clock forces every ID into one millisecond, and a clock that
	// goes backwards must not reorder IDs either.
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ticks := []time.Time{base, base, base, base.Add(-time.Second), base.Add(time.Millisecond)}
	i := 0
	m := jam.NewMinter(func() time.Time { t := ticks[i%len(ticks)]; i++; return t }, nil)
	var ids []string
	for range 1000 {
		ids = append(ids, string(jam.New[jam.TurnID](m)))
	}
	require.True(t, sort.StringsAreSorted(ids), "minted IDs must sort in minting order")
	seen := map[string]bool{}
	for _, id := range ids {
		require.False(t, seen[id], "duplicate %s", id)
		seen[id] = true
		_, err := jam.ParseID[jam.TurnID](id)
		require.NoError(t, err)
	}
	first := jam.TurnID(ids[0])
	at, err := jam.IDTime(first)
	require.NoError(t, err)
	require.Equal(t, base, at)
}

func TestMinter_entropyFailurePanics(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(nil, bytes.NewReader(nil))
	require.Panics(t, func() { jam.New[jam.JobID](m) })
}

func TestPrefixes_areDistinct(t *testing.T) {
	t.Parallel()
	prefixes := []string{
		jam.WorkspaceID("").Prefix(), jam.AccountID("").Prefix(), jam.BindingID("").Prefix(),
		jam.TemplateID("").Prefix(), jam.SessionID("").Prefix(), jam.MessageID("").Prefix(),
		jam.TurnID("").Prefix(), jam.ExecutionID("").Prefix(), jam.LeaseID("").Prefix(),
		jam.WorktreeID("").Prefix(), jam.SnapshotID("").Prefix(), jam.ChangeSetID("").Prefix(),
		jam.DeliveryID("").Prefix(), jam.DelegationID("").Prefix(), jam.ConnectionID("").Prefix(),
		jam.JobID("").Prefix(), jam.OperationID("").Prefix(), jam.ApprovalID("").Prefix(),
	}
	seen := map[string]bool{}
	for _, p := range prefixes {
		require.False(t, seen[p], "prefix %s used twice", p)
		require.True(t, strings.HasSuffix(p, "_"))
		seen[p] = true
	}
}

func TestID_jsonRoundTripValidates(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(nil, nil)
	type body struct {
		Session jam.SessionID `json:"session_id"`
		Room    jam.RoomID    `json:"room_id"`
		Peer    jam.PeerKey   `json:"peer"`
	}
	in := body{Session: jam.New[jam.SessionID](m), Room: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", Peer: jam.PeerKey{Profile: "default", Scope: "coder"}}
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"peer":"default/coder"`)
	var out body
	require.NoError(t, json.Unmarshal(raw, &out))
	require.Equal(t, in, out)

	bad := strings.Replace(string(raw), string(in.Session), "turn_01jdq0000000000000000000000", 1)
	err = json.Unmarshal([]byte(bad), &out)
	require.Error(t, err)
	require.True(t, errors.Is(err, jam.ErrInvalid), "got %v", err)
}

func FuzzParseID(f *testing.F) {
	m := jam.NewMinter(nil, nil)
	f.Add(string(jam.New[jam.SessionID](m)))
	f.Add("sess_")
	f.Add("turn_01jdq0000000000000000000000")
	f.Add("sess_7zzzzzzzzzzzzzzzzzzzzzzzzz")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := jam.ParseID[jam.SessionID](s)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if string(id) != s {
			t.Fatalf("parse changed %q to %q", s, id)
		}
		if _, err := jam.IDTime(id); err != nil {
			t.Fatalf("IDTime of a valid id: %v", err)
		}
	})
}

func TestID_emptyTextIsZero(t *testing.T) {
	t.Parallel()
	var body struct {
		Session jam.SessionID `json:"session_id"`
		Room    jam.RoomID    `json:"room_id"`
		Peer    jam.PeerKey   `json:"peer"`
	}
	body.Session = "x"
	require.NoError(t, json.Unmarshal([]byte(`{"session_id":"","room_id":"","peer":""}`), &body))
	require.Empty(t, body.Session)
	require.Empty(t, body.Room)
	require.True(t, body.Peer.IsZero())
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	require.JSONEq(t, `{"session_id":"","room_id":"","peer":""}`, string(raw))
}
