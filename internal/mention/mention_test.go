package mention_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/mention"
)

const (
	idA     = "0b6c7d2e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
	idB     = "1c7d8e3f-2a3b-4c4d-9e5f-6a7b8c9d0e1f"
	idOwner = "2d8e9f40-3b4c-4d5e-af60-7b8c9d0e1f20"
)

var (
	tA     = mention.Target{ID: idA, Handle: "owner/alpha", Name: "Alpha Bot"}
	tB     = mention.Target{ID: idB, Handle: "@owner/beta", Name: "Beta"}
	tOwner = mention.Target{ID: idOwner, Handle: "owner", Name: "owner"}
)

func tok(id string) string { return mention.Token(id) }

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		targets []mention.Target
		want    string
	}{
		{name: "handle rewritten", content: "@owner/alpha hi", targets: []mention.Target{tA}, want: tok(idA) + " hi"},
		{name: "handle with @ in target", content: "ping @owner/beta now", targets: []mention.Target{tB}, want: "ping " + tok(idB) + " now"},
		{name: "display name rewritten", content: "hey @Alpha Bot, look", targets: []mention.Target{tA}, want: "hey " + tok(idA) + ", look"},
		{name: "case-insensitive", content: "@OWNER/ALPHA hi", targets: []mention.Target{tA}, want: tok(idA) + " hi"},
		{name: "unreferenced prepended", content: "hello", targets: []mention.Target{tA}, want: tok(idA) + " hello"},
		{name: "several prepended in order", content: "hello", targets: []mention.Target{tB, tA}, want: tok(idB) + " " + tok(idA) + " hello"},
		{name: "one referenced one prepended", content: "@owner/alpha hi", targets: []mention.Target{tA, tB}, want: tok(idB) + " " + tok(idA) + " hi"},
		{name: "only first span rewritten", content: "@owner/alpha then @owner/alpha", targets: []mention.Target{tA}, want: tok(idA) + " then @owner/alpha"},
		{name: "existing token kept", content: "hi " + tok(idA), targets: []mention.Target{tA}, want: "hi " + tok(idA)},
		{name: "existing upper-case token kept", content: "hi @[[0B6C7D2E-1F2A-4B3C-8D4E-5F6A7B8C9D0E]]", targets: []mention.Target{tA}, want: "hi @[[0B6C7D2E-1F2A-4B3C-8D4E-5F6A7B8C9D0E]]"},
		{name: "token later wins over earlier span", content: "@owner/alpha " + tok(idA), targets: []mention.Target{tA}, want: "@owner/alpha " + tok(idA)},
		{name: "prefix of longer handle not matched", content: "@owner/alpha hi", targets: []mention.Target{tOwner}, want: tok(idOwner) + " @owner/alpha hi"},
		{name: "longest match wins", content: "@owner/alpha hi @owner", targets: []mention.Target{tOwner, tA}, want: tok(idA) + " hi " + tok(idOwner)},
		{name: "email is not a mention", content: "mail owner@owner please", targets: []mention.Target{tOwner}, want: tok(idOwner) + " mail owner@owner please"},
		{name: "punctuation ends a mention", content: "thanks @owner.", targets: []mention.Target{tOwner}, want: "thanks " + tok(idOwner) + "."},
		{name: "word continues", content: "@owners", targets: []mention.Target{tOwner}, want: tok(idOwner) + " @owners"},
		{name: "duplicate targets count once", content: "x", targets: []mention.Target{tA, tA}, want: tok(idA) + " x"},
		{name: "upper-case target id", content: "x", targets: []mention.Target{{ID: "0B6C7D2E-1F2A-4B3C-8D4E-5F6A7B8C9D0E"}}, want: tok(idA) + " x"},
		{name: "bad target id ignored", content: "x", targets: []mention.Target{{ID: "nope", Handle: "x"}}, want: "x"},
		{name: "no targets", content: "@owner hi", want: "@owner hi"},
		{name: "handle containing @ never matched", content: "@a@b hi", targets: []mention.Target{{ID: idA, Name: "a@b"}}, want: tok(idA) + " @a@b hi"},
		{name: "unicode name", content: "¡@Zoë! ok", targets: []mention.Target{{ID: idA, Name: "zoë"}}, want: "¡" + tok(idA) + "! ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mention.Normalize(tt.content, tt.targets)
			require.Equal(t, tt.want, got)
			require.Equal(t, got, mention.Normalize(got, tt.targets), "idempotent")
		})
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	handles := map[string]string{idA: "owner/alpha", idOwner: "@owner"}
	lookup := func(id string) (string, bool) { h, ok := handles[id]; return h, ok }
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{name: "known token", content: tok(idA) + " hi", want: "@owner/alpha hi"},
		{name: "handle with leading @", content: "to " + tok(idOwner), want: "to @owner"},
		{name: "unknown token kept", content: tok(idB) + " hi", want: tok(idB) + " hi"},
		{name: "upper-case token", content: "@[[0B6C7D2E-1F2A-4B3C-8D4E-5F6A7B8C9D0E]]", want: "@owner/alpha"},
		{name: "several", content: tok(idA) + tok(idOwner) + "!", want: "@owner/alpha@owner!"},
		{name: "broken token", content: "@[[0b6c7d2e]] @[[" + idA + "]", want: "@[[0b6c7d2e]] @[[" + idA + "]"},
		{name: "no tokens", content: "plain @text", want: "plain @text"},
		{name: "empty", content: "", want: ""},
		{name: "nested opener", content: "@[[@[[" + idA + "]]", want: "@[[@owner/alpha"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, mention.Render(tt.content, lookup))
		})
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{name: "none", content: "hi @owner"},
		{name: "in order, once each", content: tok(idB) + " " + tok(idA) + " " + tok(idB), want: []string{idB, idA}},
		{name: "lower-cased", content: "@[[0B6C7D2E-1F2A-4B3C-8D4E-5F6A7B8C9D0E]]", want: []string{idA}},
		{name: "malformed skipped", content: "@[[zzzzzzzz-1f2a-4b3c-8d4e-5f6a7b8c9d0e]]" + tok(idA), want: []string{idA}},
		{name: "overlapping opener", content: "@[[@[[" + idB + "]]", want: []string{idB}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, mention.Tokens(tt.content))
		})
	}
}
