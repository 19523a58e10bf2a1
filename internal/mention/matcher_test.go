package mention

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// bruteLongest is the reference the matcher must agree with: every
// candidate of every target compared with strings.EqualFold.
func bruteLongest(content string, j int, cands [][]string) (int, int) {
	best, bestLen := -1, 0
	for k, cs := range cands {
		for _, c := range cs {
			n := len(c)
			if n <= bestLen || j+n > len(content) {
				continue
			}
			if strings.EqualFold(content[j:j+n], c) && boundaryAfter(content, j+n) {
				best, bestLen = k, n
			}
		}
	}
	return best, bestLen
}

func TestMatcher_longest(t *testing.T) {
	t.Parallel()
	cands := [][]string{{"alice", "Alice Smith"}, {"alice/bot"}, {"ALI"}, {"straße"}}
	m := &matcher{}
	for k, cs := range cands {
		for _, c := range cs {
			m.add(c, k)
		}
	}
	for _, tc := range []struct {
		content   string
		wantK     int
		wantBytes int
	}{
		{"alice hi", 0, 5},
		{"ALICE", 0, 5},
		{"alice smith!", 0, 11},
		{"alice/bot", 1, 9},
		{"alice/botx", -1, 0},
		{"alicex", -1, 0},
		{"ali", 2, 3},
		{"STRASSE", -1, 0}, // simple folding only, as strings.EqualFold
		{"", -1, 0},
	} {
		k, n := m.longest(tc.content, 0)
		require.Equal(t, [2]int{tc.wantK, tc.wantBytes}, [2]int{k, n}, "%q", tc.content)
		bk, bn := bruteLongest(tc.content, 0, cands)
		require.Equal(t, [2]int{bk, bn}, [2]int{k, n}, "%q: agrees with EqualFold", tc.content)
	}
	// A fold partner of another size in UTF-8 (ẞ is 3 bytes, ß 2) still
	// matches: the span is compared rune by rune, not byte for byte.
	k, n := m.longest("STRAẞE", 0)
	require.Equal(t, [2]int{3, 8}, [2]int{k, n})
}

// FuzzMatcher checks the trie against EqualFold on every position of
// arbitrary content, with arbitrary candidate texts.
func FuzzMatcher(f *testing.F) {
	f.Add("@alice hi @Bob", "alice", "bob", "Alice Smith")
	f.Add("\xff\xfe@K", "\xfe", "k", "K")
	f.Add("ſ ß ẞ", "s", "ß", "ſ")
	f.Fuzz(func(t *testing.T, content, a, b, c string) {
		// prepare drops texts that are not valid UTF-8.
		cands := [][]string{nonEmpty(a, b), nonEmpty(c)}
		m := &matcher{}
		for k, cs := range cands {
			for _, s := range cs {
				m.add(s, k)
			}
		}
		for j := range len(content) + 1 {
			k, n := m.longest(content, j)
			bk, bn := bruteLongest(content, j, cands)
			// The trie compares rune by rune, so it also finds spans whose
			// fold partners differ in size from the text's runes: its match
			// is never shorter than a byte-for-byte comparison's.
			if bk >= 0 && n < bn {
				t.Fatalf("at %d of %q: EqualFold finds target %d (%d bytes), the trie %d (%d bytes)", j, content, bk, bn, k, n)
			}
			if k < 0 {
				continue
			}
			span := content[j : j+n]
			if !matchesSome(span, cands[k]) || !boundaryAfter(content, j+n) {
				t.Fatalf("at %d of %q: span %q is no text of target %d on a boundary", j, content, span, k)
			}
			if k == 1 && matchesSome(span, cands[0]) {
				t.Fatalf("at %d of %q: span %q matches target 0 too, which comes first", j, content, span)
			}
		}
	})
}

// nonEmpty keeps the texts prepare would match.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" && utf8.ValidString(s) {
			out = append(out, s)
		}
	}
	return out
}

func matchesSome(span string, cands []string) bool {
	for _, c := range cands {
		if c != "" && strings.EqualFold(span, c) {
			return true
		}
	}
	return false
}

// TestNormalize_mentionFlood: a message mentioning ten thousand
// participants, with an '@' every few bytes, is normalised in time linear
// in its length. Comparing every '@' with every participant's texts took
// about 40 s of CPU for this input.
func TestNormalize_mentionFlood(t *testing.T) {
	t.Parallel()
	var targets []Target
	for i := range 10000 {
		targets = append(targets, Target{
			ID:     fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			Handle: fmt.Sprintf("owner/agent-%d", i),
			Name:   fmt.Sprintf("Agent %d", i),
		})
	}
	content := strings.Repeat("@x ", 170000) + "@owner/agent-9999 @Agent 17"
	begun := time.Now()
	out := Normalize(content, targets)
	took := time.Since(begun)
	require.Less(t, took, 10*time.Second, "normalising a mention flood")
	require.Len(t, Tokens(out), len(targets), "every mentioned participant has a token")
	require.Contains(t, out, Token(targets[9999].ID)+" "+Token(targets[17].ID))
}
