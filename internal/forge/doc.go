// Package forge is jam's client of GitHub's REST API (github.com and GitHub
// Enterprise), on go-github: find and open draft pull requests, follow them
// (state, head, checks) and merge them. Its test double is forgetest.
//
// Invariants:
//   - The token goes only into the Authorization header (Bearer). No error,
//     message or log of this package contains it: every text taken from a
//     response is passed through the client's redaction before it is kept.
//   - Every failure of a Client method, and of ParseRemote, is an [*Error]
//     with one of the Code* strings; it unwraps to a jam sentinel
//     (not_found→ErrNotFound, unavailable and rate_limited→ErrUnavailable,
//     conflict and not_mergeable→ErrConflict (a 405 is a state conflict,
//     not a bad argument), invalid→ErrInvalid,
//     credential_invalid→ErrUnauthenticated, forbidden→ErrPermissionDenied)
//     and to the underlying error, so errors.Is sees both.
//   - Every response body is read through a bound (maxBody); a longer body
//     fails the call instead of filling memory.
//   - Every request carries a deadline: the caller's, or requestTimeout when
//     the caller's context has none or a later one.
//   - The client keeps no rate-limit state between calls (go-github's
//     pre-emptive check is off): whether and when to retry is the caller's
//     decision, from [Error.Retryable] and [Error.RetryAfter].
//   - CreateDraftPullRequest never opens a second pull request for a head
//     that has one open: GitHub's 422 "A pull request already exists" is
//     answered with the existing one.
package forge
