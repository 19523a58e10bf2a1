package mention_test

import (
	"strings"
	"testing"

	"github.com/jamhq/jam/internal/mention"
)

// FuzzNormalize checks the invariants of the package doc on arbitrary
// content and arbitrary handles and names for two fixed ids.
func FuzzNormalize(f *testing.F) {
	f.Add("@owner/alpha hi", "owner/alpha", "Alpha Bot", "owner", "owner")
	f.Add("hello", "a", "b", "c", "d")
	f.Add("@Alpha Bot @owner "+mention.Token(idA), "owner/alpha", "Alpha Bot", "owner", "Owner")
	f.Add("x@owner @owner-x @owner/", "owner", "", "owner/x", "")
	f.Add("@[["+idB+"]]@[[", "@", "[[", "", "\xff")
	f.Fuzz(func(t *testing.T, content, handleA, nameA, handleB, nameB string) {
		targets := []mention.Target{
			{ID: idA, Handle: handleA, Name: nameA},
			{ID: idB, Handle: handleB, Name: nameB},
		}
		before := map[string]int{}
		for _, id := range []string{idA, idB} {
			before[id] = countTokens(content, id)
		}
		got := mention.Normalize(content, targets)
		for _, id := range []string{idA, idB} {
			n := countTokens(got, id)
			switch {
			case before[id] == 0 && n != 1:
				t.Fatalf("id %s: %d tokens after Normalize, want exactly 1 (in %q → %q)", id, n, content, got)
			case before[id] > 0 && n < 1:
				t.Fatalf("id %s: token lost (in %q → %q)", id, content, got)
			}
		}
		if again := mention.Normalize(got, targets); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", content, got, again)
		}
		// Rendering every token back must not panic and must remove every
		// token of a known id.
		r := mention.Render(got, func(id string) (string, bool) { return "h", id == idA || id == idB })
		if countTokens(r, idA)+countTokens(r, idB) != 0 {
			t.Fatalf("render left a known token: %q", r)
		}
	})
}

// FuzzRender checks that Render never panics, is the identity when the
// lookup knows nothing, and leaves no token behind when every id is known
// and the handle cannot supply the pieces of a new token.
func FuzzRender(f *testing.F) {
	f.Add(mention.Token(idA)+" hi", "owner/alpha")
	f.Add("@[[@[["+idB+"]]", "x")
	f.Add("", "")
	f.Add("@[[0B6C7D2E-1F2A-4B3C-8D4E-5F6A7B8C9D0E]]]]", "@[[")
	f.Fuzz(func(t *testing.T, content, handle string) {
		if got := mention.Render(content, func(string) (string, bool) { return "", false }); got != content {
			t.Fatalf("render with empty lookup changed %q into %q", content, got)
		}
		got := mention.Render(content, func(string) (string, bool) { return handle, true })
		if !strings.ContainsAny(handle, "@[]") && len(mention.Tokens(got)) > 0 {
			t.Fatalf("render of %q with %q left tokens %v in %q", content, handle, mention.Tokens(got), got)
		}
		for _, id := range mention.Tokens(content) {
			if len(id) != 36 || strings.ToLower(id) != id {
				t.Fatalf("Tokens returned non-canonical id %q", id)
			}
		}
	})
}

func countTokens(s, id string) int {
	n := 0
	for i := 0; i+len(mention.Token(id)) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(mention.Token(id))], mention.Token(id)) {
			n++
		}
	}
	return n
}
