package harness

import (
	"strings"
	"unicode/utf8"
)

// MaxAnswerBytes is the default bound of the answer text a turn keeps
// (Outcome.Text); the rest is counted in Outcome.Omitted.
const MaxAnswerBytes = 1 << 20

// Answer keeps the first Max bytes of a turn's answer (MaxAnswerBytes
// when Max is 0), cut at the start of a rune, and counts the bytes it does
// not keep: once a piece is cut, every later piece is counted, not kept,
// so the text kept is always a prefix of the whole answer. The zero value
// is ready for use; an Answer is not safe for concurrent use.
type Answer struct {
	Max     int
	b       strings.Builder
	omitted int
}

// Add appends s to the answer, or counts what does not fit.
func (a *Answer) Add(s string) {
	if a.omitted > 0 {
		a.omitted += len(s)
		return
	}
	limit := a.Max
	if limit <= 0 {
		limit = MaxAnswerBytes
	}
	room := limit - a.b.Len()
	if len(s) <= room {
		a.b.WriteString(s)
		return
	}
	cut := room
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	a.b.WriteString(s[:cut])
	a.omitted = len(s) - cut
}

// Text is the answer kept.
func (a *Answer) Text() string { return a.b.String() }

// Omitted counts the bytes of the answer beyond Text.
func (a *Answer) Omitted() int { return a.omitted }
