// Package mention turns the mentions of a Band text message into the
// platform's stored form and back. It is pure: no I/O, no clock, no state.
//
// Band stores and delivers message content with every mention written as a
// token "@[[<uuid>]]" (lower-case canonical UUID) and lets clients render
// tokens back into "@handle" from the room's participant list. The exact
// algorithm is not documented; this package implements the one jam's hub
// uses, inferred from the SDKs:
//
//   - [Normalize] takes the content a sender typed and the participants the
//     message mentions (mention-kind entries only; references are narrative
//     and left as typed). For each mentioned participant without a token in
//     the content, the first "@handle" or "@Display Name" span that refers
//     to it is rewritten into its token. A participant the text does not
//     reference at all gets its token prepended, in the order given, each
//     followed by one space. Later spans referring to an already referenced
//     participant are left as typed.
//   - [Render] replaces every token whose id the lookup knows with
//     "@handle", and leaves unknown tokens as they are.
//   - [Tokens] lists the ids of the tokens in content.
//
// Matching rules: a span starts at an '@' that does not follow a letter, a
// digit or '_' (so "me@example.com" is never a mention); it matches a
// handle (with or without its own leading '@') or a display name,
// case-insensitively; it must end at the end of the text or before a rune
// that is not a letter, digit, '_', '-' or '/' (so "@alice" does not match
// inside "@alice/bot"); the longest match wins. Case is folded rune by
// rune (simple folding, as strings.EqualFold). Handles and names that
// contain '@' or "[[", or are not valid UTF-8, are never matched as text,
// so a rewrite can never cut into an existing token. Matching goes through
// a trie of the folded texts: its cost grows with the content's length
// and the longest text, not with the number of participants mentioned.
//
// Invariants, checked by the fuzz targets: after Normalize every mentioned
// id has at least one token, and exactly one when the input had none;
// Normalize is idempotent; Render never panics and is the identity on text
// without tokens or when the lookup knows no id.
package mention
