package webui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecodeState(t *testing.T) {
	t.Parallel()
	hash := strings.Repeat("ab", 32)
	cases := []struct {
		name, in, wantErr string
		want              int
	}{
		{name: "empty table", in: `{"version":1,"sessions":[]}`},
		{name: "one session", in: `{"version":1,"sessions":[{"id_hash":"` + hash + `","created":100,"last_seen":200}]}`, want: 1},
		{name: "not json", in: `{`, wantErr: "unexpected end"},
		{name: "other version", in: `{"version":2,"sessions":[]}`, wantErr: "version 2"},
		{name: "short hash", in: `{"version":1,"sessions":[{"id_hash":"abcd","created":1,"last_seen":1}]}`, wantErr: "id_hash"},
		{name: "not hex", in: `{"version":1,"sessions":[{"id_hash":"` + strings.Repeat("zz", 32) + `","created":1,"last_seen":1}]}`, wantErr: "id_hash"},
		{name: "zero created", in: `{"version":1,"sessions":[{"id_hash":"` + hash + `","created":0,"last_seen":1}]}`, wantErr: "bad times"},
		{name: "seen before created", in: `{"version":1,"sessions":[{"id_hash":"` + hash + `","created":5,"last_seen":4}]}`, wantErr: "bad times"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeState([]byte(tc.in))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, tc.want)
		})
	}
}

func TestState_roundTrip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	in := map[idHash]*session{{1}: {Created: now, LastSeen: now.Add(time.Hour)}, {2}: {Created: now, LastSeen: now}}
	raw, err := encodeState(in)
	require.NoError(t, err)
	out, err := decodeState(raw)
	require.NoError(t, err)
	require.Len(t, out, 2)
	require.True(t, out[idHash{1}].LastSeen.Equal(now.Add(time.Hour)))
}

func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"version":1,"sessions":[{"id_hash":"` + strings.Repeat("ab", 32) + `","created":100,"last_seen":200}]}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		table, err := decodeState(raw)
		if err != nil {
			return
		}
		// What decodes encodes and decodes to the same table.
		again, err := encodeState(table)
		require.NoError(t, err)
		back, err := decodeState(again)
		require.NoError(t, err)
		require.Len(t, back, len(table))
	})
}
