package jam

import (
	"fmt"
	"strings"
)

// What a person types for a room, session, turn or message names one:
// its whole id, a unique prefix of the id, or, for a room, its title
// (exact, then equal but for case). Several matches are ErrInvalid,
// naming at most maxCandidates; none is ErrNotFound.

// maxCandidates bounds the matches an ambiguous reference's error names.
const maxCandidates = 5

// RefCandidate is one object a reference may name: its id, and for rooms
// its title.
type RefCandidate struct{ ID, Title string }

func (c RefCandidate) String() string {
	if c.Title == "" {
		return c.ID
	}
	return fmt.Sprintf("%s (%q)", c.ID, c.Title)
}

// PickRef resolves ref among cands: an exact title (then one equal but for
// case), else a prefix of the id. Errors name the reference as typed,
// shown.
func PickRef(kind, shown, ref string, cands []RefCandidate) (string, error) {
	if strings.TrimSpace(shown) == "" {
		return "", fmt.Errorf("%w: no %s given", ErrInvalid, kind)
	}
	match := func(f func(RefCandidate) bool) []RefCandidate {
		var out []RefCandidate
		for _, c := range cands {
			if f(c) {
				out = append(out, c)
			}
		}
		return out
	}
	for _, f := range []func(RefCandidate) bool{
		func(c RefCandidate) bool { return c.ID == ref },
		func(c RefCandidate) bool { return c.Title != "" && c.Title == ref },
		func(c RefCandidate) bool { return c.Title != "" && strings.EqualFold(c.Title, ref) },
		func(c RefCandidate) bool { return strings.HasPrefix(c.ID, strings.ToLower(ref)) },
	} {
		switch found := match(f); len(found) {
		case 0:
			continue
		case 1:
			return found[0].ID, nil
		default:
			names := make([]string, 0, maxCandidates)
			for _, c := range found[:min(len(found), maxCandidates)] {
				names = append(names, c.String())
			}
			more := ""
			if len(found) > maxCandidates {
				more = fmt.Sprintf(" and %d more", len(found)-maxCandidates)
			}
			return "", fmt.Errorf("%w: %s %q is ambiguous: it matches %s%s; give more of the id", ErrInvalid, kind, clip(shown), strings.Join(names, ", "), more)
		}
	}
	return "", fmt.Errorf("%w: no %s %q", ErrNotFound, kind, clip(shown))
}

// WithPrefix puts an id type's prefix (Prefix: "sess_", "turn_") on a
// reference that lacks it, so "01m8…" and "sess_01m8…" name the same.
func WithPrefix(prefix, ref string) string {
	if strings.HasPrefix(ref, prefix) {
		return ref
	}
	return prefix + ref
}
