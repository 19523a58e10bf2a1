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

func TestParseMessageID(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(nil, nil)
	notice := jam.NoticeID(jam.New[jam.MessageID](m))
	tests := []struct {
		name    string
		in      string
		want    jam.PlatformMessageID
		notice  bool
		wantErr string
	}{
		{name: "uuid folds case", in: "0F8FAD5B-D9CB-469F-A165-70867728950E", want: "0f8fad5b-d9cb-469f-a165-70867728950e"},
		{name: "notice", in: string(notice), want: notice, notice: true},
		{name: "notice without body", in: jam.NoticePrefix, wantErr: "notice id"},
		{name: "notice with a uuid body", in: jam.NoticePrefix + "0f8fad5b-d9cb-469f-a165-70867728950e", wantErr: "notice id"},
		{name: "notice prefix in capitals", in: "JAM-NOTICE:" + string(jam.New[jam.MessageID](m)), wantErr: "not a UUID"},
		{name: "empty", in: "", wantErr: "not a UUID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := jam.ParseMessageID(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, jam.ErrInvalid) {
					t.Fatalf("jam.ParseMessageID(%q) = %q, %v; want an invalid-argument error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || got.IsNotice() != tt.notice {
				t.Fatalf("jam.ParseMessageID(%q) = %q (notice %v), %v; want %q (notice %v)", tt.in, got, got.IsNotice(), err, tt.want, tt.notice)
			}
			var u jam.PlatformMessageID
			if err := u.UnmarshalText([]byte(tt.in)); err != nil || u != tt.want {
				t.Fatalf("UnmarshalText(%q) = %q, %v", tt.in, u, err)
			}
		})
	}
}
