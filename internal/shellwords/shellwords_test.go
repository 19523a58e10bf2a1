package shellwords

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "jam demo-agent", want: []string{"jam", "demo-agent"}},
		{in: "  opencode   acp\t--pure\n", want: []string{"opencode", "acp", "--pure"}},
		{in: `sh -c 'echo "$HOME"; exit 1'`, want: []string{"sh", "-c", `echo "$HOME"; exit 1`}},
		{in: `a "b c" d`, want: []string{"a", "b c", "d"}},
		{in: `"a\"b\\c\$d" "\n"`, want: []string{`a"b\c$d`, `\n`}},
		{in: `a\ b c\'d`, want: []string{"a b", "c'd"}},
		{in: `x''y ""`, want: []string{"xy", ""}},
		{in: "", wantErr: "empty"},
		{in: "   ", wantErr: "empty"},
		{in: `a 'b`, wantErr: "unterminated quote"},
		{in: `a "b`, wantErr: "unterminated quote"},
		{in: `a b\`, wantErr: "backslash"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := Split(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"jam demo-agent", `a "b c" 'd e'`, `x\ y`, `"\$"`, `'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := Split(line)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error not invalid-argument: %v", err)
			}
			return
		}
		if len(words) == 0 {
			t.Fatal("no words without an error")
		}
		// Quoting each word in single quotes and splitting again gives the
		// same words.
		var b strings.Builder
		for i, w := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("'" + strings.ReplaceAll(w, "'", `'\''`) + "'")
		}
		again, err := Split(b.String())
		if err != nil || len(again) != len(words) {
			t.Fatalf("requote %q: %v %q", b.String(), err, again)
		}
		for i := range words {
			if again[i] != words[i] {
				t.Fatalf("word %d: %q became %q", i, words[i], again[i])
			}
		}
	})
}
