package jam_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

// TestPickRef: a whole id, a title (exact, then but for case) or a unique
// id prefix names one object; several are invalid naming at most
// five of them; none is not found, naming the reference as
// typed.
func TestPickRef(t *testing.T) {
	t.Parallel()
	rooms := []jam.RefCandidate{
		{ID: "e663148c-0000-4000-8000-000000000001", Title: "first room"},
		{ID: "e663148c-0000-4000-8000-000000000002", Title: "First Room"},
		{ID: "a1b2c3d4-0000-4000-8000-000000000003", Title: "demo"},
		{ID: "b0000000-0000-4000-8000-000000000004", Title: "a1b2"},
	}
	for _, tc := range []struct {
		ref, want, err string
		is             error
	}{
		{ref: "e663148c-0000-4000-8000-000000000002", want: "e663148c-0000-4000-8000-000000000002"},
		{ref: "first room", want: "e663148c-0000-4000-8000-000000000001"},
		{ref: "First Room", want: "e663148c-0000-4000-8000-000000000002"},
		{ref: "DEMO", want: "a1b2c3d4-0000-4000-8000-000000000003"},
		{ref: "a1b2", want: "b0000000-0000-4000-8000-000000000004"}, // a title wins over a prefix
		{ref: "A1B2C", want: "a1b2c3d4-0000-4000-8000-000000000003"},
		{ref: "first ROOM", is: jam.ErrInvalid, err: `room "first ROOM" is ambiguous: it matches e663148c-0000-4000-8000-000000000001 ("first room"), e663148c-0000-4000-8000-000000000002 ("First Room"); give more of the id`},
		{ref: "e663148c", is: jam.ErrInvalid, err: `room "e663148c" is ambiguous`},
		{ref: "ffff", is: jam.ErrNotFound, err: `no room "ffff"`},
		{ref: " ", is: jam.ErrInvalid, err: "no room given"},
	} {
		got, err := jam.PickRef("room", tc.ref, tc.ref, rooms)
		if tc.is != nil {
			require.ErrorIs(t, err, tc.is, tc.ref)
			require.ErrorContains(t, err, tc.err, tc.ref)
			continue
		}
		require.NoError(t, err, tc.ref)
		require.Equal(t, tc.want, got, tc.ref)
	}

	var many []jam.RefCandidate
	for _, c := range "abcdefgh" {
		many = append(many, jam.RefCandidate{ID: "turn_01" + string(c)})
	}
	_, err := jam.PickRef("turn", "01", jam.WithPrefix("turn_", "01"), many)
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.ErrorContains(t, err, `turn "01" is ambiguous: it matches turn_01a, turn_01b, turn_01c, turn_01d, turn_01e and 3 more`)
	got, err := jam.PickRef("turn", "01c", jam.WithPrefix("turn_", "01c"), many)
	require.NoError(t, err)
	require.Equal(t, "turn_01c", got)
	got, err = jam.PickRef("turn", "turn_01d", jam.WithPrefix("turn_", "turn_01d"), many)
	require.NoError(t, err)
	require.Equal(t, "turn_01d", got)
}

// FuzzPickRef: any reference resolves to one of the candidates or fails
// as invalid or not found, never anything else.
func FuzzPickRef(f *testing.F) {
	for _, s := range []string{"", "a", "first room", "e663148c", "turn_", "\x00", "ÄÖ"} {
		f.Add(s)
	}
	cands := []jam.RefCandidate{{ID: "e663148c-0000-4000-8000-000000000001", Title: "first room"}, {ID: "e663148c-0000-4000-8000-000000000002", Title: "Ä"}}
	f.Fuzz(func(t *testing.T, ref string) {
		got, err := jam.PickRef("room", ref, ref, cands)
		if err != nil {
			if !jamIsInvalidOrNotFound(err) {
				t.Fatalf("pick %q: %v", ref, err)
			}
			return
		}
		if got != cands[0].ID && got != cands[1].ID {
			t.Fatalf("pick %q = %q, not a candidate", ref, got)
		}
	})
}

func jamIsInvalidOrNotFound(err error) bool {
	return errors.Is(err, jam.ErrInvalid) || errors.Is(err, jam.ErrNotFound)
}
