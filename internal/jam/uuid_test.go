package jam_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestParseUUID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		want    jam.RoomID
		wantErr string
	}{
		{name: "lower", in: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", want: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"},
		{name: "upper is normalised", in: "0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B", want: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"},
		{name: "empty", in: "", wantErr: "want 36 characters"},
		{name: "braces", in: "{0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a}", wantErr: "is not hexadecimal"},
		{name: "no dashes", in: "0190a1b2c3d47e5f8a9b0c1d2e3f4a5b", wantErr: "want 36 characters"},
		{name: "dash misplaced", in: "0190a1b2c-3d4-7e5f-8a9b-0c1d2e3f4a5b", wantErr: "want '-' at offset 8"},
		{name: "not hex", in: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5g", wantErr: "is not hexadecimal"},
		{name: "jam id", in: "sess_01jdq00000000000000000000000", wantErr: "room id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := jam.ParseUUID[jam.RoomID](tc.in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func FuzzParseUUID(f *testing.F) {
	f.Add("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
	f.Add("0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := jam.ParseUUID[jam.IdentityID](s)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if string(id) != strings.ToLower(s) {
			t.Fatalf("parse of %q gave %q", s, id)
		}
		again, err := jam.ParseUUID[jam.IdentityID](string(id))
		if err != nil || again != id {
			t.Fatalf("canonical form %q does not round-trip: %v", id, err)
		}
	})
}
