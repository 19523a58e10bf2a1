package git_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/git"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []git.Change
		err      string
	}{
		{name: "clean", in: ""},
		{name: "untracked", in: "?? a b.md\x00", want: []git.Change{{XY: "??", Path: "a b.md"}}},
		{name: "several", in: " M README\x00 D gone\x00A  new\x00", want: []git.Change{{XY: " M", Path: "README"}, {XY: " D", Path: "gone"}, {XY: "A ", Path: "new"}}},
		{name: "rename", in: "R  to.go\x00from.go\x00?? x\x00", want: []git.Change{{XY: "R ", Path: "to.go", From: "from.go"}, {XY: "??", Path: "x"}}},
		{name: "copy in the work tree", in: " C copy\x00orig\x00", want: []git.Change{{XY: " C", Path: "copy", From: "orig"}}},
		{name: "arrow in a name", in: "?? a -> b\x00", want: []git.Change{{XY: "??", Path: "a -> b"}}},
		{name: "blanks kept", in: "??  lead \x00", want: []git.Change{{XY: "??", Path: " lead "}}},
		{name: "no terminator", in: "?? x", want: []git.Change{{XY: "??", Path: "x"}}},
		{name: "short", in: "??\x00", err: "malformed entry"},
		{name: "no separator", in: "??xname\x00", err: "malformed entry"},
		{name: "empty entry", in: "?? x\x00\x00?? y\x00", err: "empty entry"},
		{name: "rename without source", in: "R  to.go\x00", err: "without its source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := git.ParseStatus(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// FuzzParseStatus: any input either fails or decodes into entries that
// encode back to the same bytes.
func FuzzParseStatus(f *testing.F) {
	for _, seed := range []string{"", "?? a b.md\x00", "R  to.go\x00from.go\x00?? x\x00", " M README\x00 D gone\x00", "R  x\x00", "??\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		changes, err := git.ParseStatus(in)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, c := range changes {
			require.Len(t, c.XY, 2)
			require.NotEmpty(t, c.Path)
			b.WriteString(c.XY + " " + c.Path + "\x00")
			if c.From != "" {
				b.WriteString(c.From + "\x00")
			}
		}
		require.Equal(t, strings.TrimSuffix(in, "\x00"), strings.TrimSuffix(b.String(), "\x00"))
	})
}
