package jam_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestParsePeerKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		want    jam.PeerKey
		wantErr string
	}{
		{name: "plain", in: "default/coder", want: jam.PeerKey{Profile: "default", Scope: "coder"}},
		{name: "punctuation", in: "work-2/claude_code.v1", want: jam.PeerKey{Profile: "work-2", Scope: "claude_code.v1"}},
		{name: "no slash", in: "default", wantErr: "want profile/scope"},
		{name: "empty profile", in: "/coder", wantErr: "profile is empty"},
		{name: "empty scope", in: "default/", wantErr: "scope is empty"},
		{name: "two slashes", in: "a/b/c", wantErr: `character '/'`},
		{name: "dot start", in: "../coder", wantErr: "starts with '.'"},
		{name: "space", in: "default/my agent", wantErr: `character ' '`},
		{name: "too long", in: "default/" + strings.Repeat("a", 65), wantErr: "longer than 64"},
		{name: "unicode", in: "défault/coder", wantErr: "is not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := jam.ParsePeerKey(tc.in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.in, got.String())
		})
	}
}

func TestPeerKey_marshalRejectsInvalid(t *testing.T) {
	t.Parallel()
	_, err := jam.PeerKey{Profile: "a/b", Scope: "c"}.MarshalText()
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.True(t, jam.PeerKey{}.IsZero())
}

func FuzzParsePeerKey(f *testing.F) {
	f.Add("default/coder")
	f.Add("a/b/c")
	f.Add("/")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := jam.ParsePeerKey(s)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if k.String() != s {
			t.Fatalf("round trip of %q gave %q", s, k)
		}
	})
}
