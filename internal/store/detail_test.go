package store_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store"
)

func TestBoundTurnDetail(t *testing.T) {
	t.Parallel()
	atBound := strings.Repeat("a", store.TurnDetailMax)
	for _, tt := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "acp: initialize: context deadline exceeded", "acp: initialize: context deadline exceeded"},
		{"trimmed", "\n  exit status 1 \t\n", "exit status 1"},
		{"newline and tab kept", "one\n\ttwo", "one\n\ttwo"},
		{"escape replaced", "\x1b[31mred\x1b[0m", "\uFFFD[31mred\uFFFD[0m"},
		{"carriage return replaced", "a\rb", "a\uFFFDb"},
		{"NUL replaced", "a\x00b", "a\uFFFDb"},
		{"C1 control replaced", "a\u0085b", "a\uFFFDb"},
		{"line separators replaced", "a\u2028b\u2029c", "a\uFFFDb\uFFFDc"},
		{"invalid UTF-8 replaced", "a\xff\xfeb", "a\uFFFDb"},
		{"at the bound kept whole", atBound, atBound},
		{"one past the bound cut", atBound + "b", strings.Repeat("a", store.TurnDetailMax-len("…")) + "…"},
		{"cut on a rune boundary", strings.Repeat("é", store.TurnDetailMax), strings.Repeat("é", (store.TurnDetailMax-len("…"))/2) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, store.BoundTurnDetail(tt.in))
		})
	}
}

func FuzzBoundTurnDetail(f *testing.F) {
	for _, s := range []string{"", "exit status 1", "a\x1b[2J\r\n\tb", "\xff\xfe", strings.Repeat("日本", store.TurnDetailMax)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := store.BoundTurnDetail(in)
		require.LessOrEqual(t, len(out), store.TurnDetailMax)
		require.True(t, utf8.ValidString(out))
		for _, r := range out {
			require.False(t, unicode.IsControl(r) && r != '\n' && r != '\t', "control %U left in %q", r, out)
		}
		require.Equal(t, out, store.BoundTurnDetail(out), "bounding is idempotent")
	})
}
