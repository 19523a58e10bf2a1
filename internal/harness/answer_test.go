package harness_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// TestAnswer: the answer keeps at most Max bytes, cut at a rune start, and
// counts every byte it does not keep, later pieces included.
func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		pieces  []string
		text    string
		omitted int
	}{
		{"empty", 4, nil, "", 0},
		{"fits", 4, []string{"ab", "cd"}, "abcd", 0},
		{"cut ascii", 4, []string{"abc", "def"}, "abcd", 2},
		{"later pieces counted", 4, []string{"abcdef", "g", "hi"}, "abcd", 5},
		{"cut before a two-byte rune", 4, []string{"abc", "é"}, "abc", 2},
		{"cut inside a three-byte rune", 5, []string{"ab", "€€"}, "ab€", 3},
		{"no room for the first rune", 2, []string{"€"}, "", 3},
		{"after a short cut nothing more is kept", 4, []string{"abc", "é", "d"}, "abc", 3},
		{"exactly full, then more", 3, []string{"abc", "d"}, "abc", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := harness.Answer{Max: tc.max}
			total := 0
			for _, p := range tc.pieces {
				a.Add(p)
				total += len(p)
			}
			require.Equal(t, tc.text, a.Text())
			require.Equal(t, tc.omitted, a.Omitted())
			require.Equal(t, total, len(a.Text())+a.Omitted())
			require.True(t, utf8.ValidString(a.Text()))
		})
	}
}

// TestAnswer_defaultMax: the zero Answer keeps MaxAnswerBytes.
func TestAnswer_defaultMax(t *testing.T) {
	var a harness.Answer
	a.Add(strings.Repeat("é", harness.MaxAnswerBytes/2+1))
	require.Len(t, a.Text(), harness.MaxAnswerBytes)
	require.Equal(t, 2, a.Omitted())
}
