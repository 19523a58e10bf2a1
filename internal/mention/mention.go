package mention

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
)

// Target is a participant a message mentions.
type Target struct {
	// ID is the participant's UUID; the token carries its lower-case form.
	ID string
	// Handle is "alice" or "alice/report-bot", with or without a leading '@'.
	Handle string
	// Name is the display name, without '@'.
	Name string
}

const (
	tokenOpen  = "@[["
	tokenClose = "]]"
	uuidLen    = 36
	tokenLen   = len(tokenOpen) + uuidLen + len(tokenClose)
)

// Token returns the stored form of a mention of id.
func Token(id string) string { return tokenOpen + strings.ToLower(id) + tokenClose }

// tokenAt reports whether a token starts at s[i], and returns its id in
// lower case.
func tokenAt(s string, i int) (string, bool) {
	if len(s)-i < tokenLen || !strings.HasPrefix(s[i:], tokenOpen) || s[i+tokenLen-2:i+tokenLen] != tokenClose {
		return "", false
	}
	id, err := jam.ParseUUID[jam.IdentityID](s[i+len(tokenOpen) : i+len(tokenOpen)+uuidLen])
	if err != nil {
		return "", false
	}
	return string(id), true
}

// Tokens returns the id of every token in content, in order of
// appearance, each id once.
func Tokens(content string) []string {
	var ids []string
	seen := map[string]bool{}
	for i := strings.Index(content, tokenOpen); i >= 0; {
		id, ok := tokenAt(content, i)
		step := 1
		if ok {
			step = tokenLen
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		next := strings.Index(content[i+step:], tokenOpen)
		if next < 0 {
			break
		}
		i += step + next
	}
	return ids
}

// Render replaces each token whose id lookup knows with "@" + handle.
// Tokens of unknown ids stay as they are.
func Render(content string, lookup func(id string) (handle string, ok bool)) string {
	if !strings.Contains(content, tokenOpen) {
		return content
	}
	var b strings.Builder
	b.Grow(len(content))
	last := 0
	for i := 0; i < len(content); {
		j := strings.Index(content[i:], tokenOpen)
		if j < 0 {
			break
		}
		i += j
		id, ok := tokenAt(content, i)
		if !ok {
			i++
			continue
		}
		handle, known := lookup(id)
		if known {
			b.WriteString(content[last:i])
			b.WriteByte('@')
			b.WriteString(strings.TrimPrefix(handle, "@"))
			last = i + tokenLen
		}
		i += tokenLen
	}
	b.WriteString(content[last:])
	return b.String()
}

// Normalize rewrites content into Band's stored form for a message that
// mentions the given participants. See the package doc for the rules.
// Targets whose id is not a UUID are ignored, and repeated ids count once.
func Normalize(content string, mentioned []Target) string {
	targets, match := prepare(mentioned)
	if len(targets) == 0 {
		return content
	}
	byID := make(map[string]int, len(targets))
	for k, id := range targets {
		byID[id] = k
	}
	// Pass one: a participant that already has a token is referenced, even
	// if a textual span for it comes first.
	referenced := make([]bool, len(targets))
	for _, id := range Tokens(content) {
		if k, ok := byID[id]; ok {
			referenced[k] = true
		}
	}
	// Pass two: rewrite the first span of each participant still without
	// a reference.
	var b strings.Builder
	b.Grow(len(content) + len(targets)*(tokenLen+1))
	last := 0
	for i := 0; i < len(content); {
		if content[i] != '@' {
			i++
			continue
		}
		if _, ok := tokenAt(content, i); ok {
			i += tokenLen
			continue
		}
		if !boundaryBefore(content, i) {
			i++
			continue
		}
		k, n := match.longest(content, i+1)
		if k < 0 {
			i++
			continue
		}
		if !referenced[k] {
			referenced[k] = true
			b.WriteString(content[last:i])
			b.WriteString(Token(targets[k]))
			last = i + 1 + n
		}
		i += 1 + n
	}
	var prefix strings.Builder
	for k, id := range targets {
		if !referenced[k] {
			prefix.WriteString(Token(id))
			prefix.WriteByte(' ')
		}
	}
	b.WriteString(content[last:])
	return prefix.String() + b.String()
}

// matcher finds the longest candidate text (a handle or display name)
// that starts at a position of the content. It is a trie over case-folded
// runes, so a lookup costs the length of the longest candidate whatever
// the number of targets: a message mentioning thousands of participants
// stays linear in its length.
type matcher struct {
	nodes []trieNode
}

type trieNode struct {
	next   map[rune]int32
	target int // index of the first target whose text ends here, or -1
}

// foldRune maps r to the smallest rune of its simple case-folding orbit,
// so two runes fold to the same value exactly when strings.EqualFold
// holds for them.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

func (m *matcher) add(text string, target int) {
	if len(m.nodes) == 0 {
		m.nodes = append(m.nodes, trieNode{target: -1})
	}
	n := int32(0)
	for _, r := range text {
		r = foldRune(r)
		child, ok := m.nodes[n].next[r]
		if !ok {
			if m.nodes[n].next == nil {
				m.nodes[n].next = map[rune]int32{}
			}
			child = int32(len(m.nodes))
			m.nodes[n].next[r] = child
			m.nodes = append(m.nodes, trieNode{target: -1})
		}
		n = child
	}
	if m.nodes[n].target < 0 {
		m.nodes[n].target = target // the first target given wins a tie
	}
}

// longest returns the target whose text matches content[j:] longest,
// ending on a boundary, and the length in bytes of the matched span; or
// -1.
func (m *matcher) longest(content string, j int) (int, int) {
	best, bestLen := -1, 0
	if len(m.nodes) == 0 {
		return best, bestLen
	}
	n := int32(0)
	for i := j; i < len(content); {
		r, size := utf8.DecodeRuneInString(content[i:])
		child, ok := m.nodes[n].next[foldRune(r)]
		if !ok {
			break
		}
		n, i = child, i+size
		if t := m.nodes[n].target; t >= 0 && boundaryAfter(content, i) {
			best, bestLen = t, i-j
		}
	}
	return best, bestLen
}

// prepare dedupes targets by id, returning their ids in order and a
// matcher of the texts that refer to each.
func prepare(mentioned []Target) ([]string, *matcher) {
	ids := make([]string, 0, len(mentioned))
	m := &matcher{}
	seen := map[string]bool{}
	for _, t := range mentioned {
		parsed, err := jam.ParseUUID[jam.IdentityID](t.ID)
		id := string(parsed)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		for _, c := range []string{strings.TrimPrefix(t.Handle, "@"), t.Name} {
			if c != "" && utf8.ValidString(c) && !strings.ContainsRune(c, '@') && !strings.Contains(c, "[[") {
				m.add(c, len(ids))
			}
		}
		ids = append(ids, id)
	}
	return ids, m
}

// boundaryBefore reports whether an '@' at i may start a mention.
func boundaryBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !isWord(r)
}

// boundaryAfter reports whether a mention may end at i.
func boundaryAfter(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isWord(r) && r != '-' && r != '/'
}

func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
