// Package forgetest is a GitHub double for tests: a real HTTP server on a
// loopback socket serving the REST operations jam uses (repos/get,
// pulls/list, pulls/create, pulls/get, pulls/merge,
// repos/get-combined-status-for-ref, checks/list-for-ref, git/get-ref,
// users/get-authenticated) and, under /git/, real bare repositories
// through git http-backend, so a pushed branch really exists and a pull
// request's head is a real commit.
//
// Invariants:
//   - Every REST request is validated against GitHub's own OpenAPI
//     description (embedded from testdata/openapi.json): method and path,
//     path and query parameters, and the body against the requestBody
//     schema; every response body against the schema the description
//     declares for its status. An undeclared 4xx or 5xx must be a
//     basic-error (the description omits statuses GitHub really sends:
//     NOTES.md); an undeclared 2xx or 3xx is a violation. Violations are
//     recorded and fail the test at cleanup.
//   - A response is complete: the fields the double's state does not
//     determine (URLs, counters, the repository's many settings) are
//     filled from the schema (every required property, null where
//     nullable); the fields it does determine (numbers, states, refs,
//     shas, titles) are set over them, and validation checks those.
//   - The description is parsed once per process and shared (immutable).
//     openapicheck resolves only $refs under #/components/schemas/, so the
//     others (parameters, responses, headers) are inlined before it parses
//     the document and examples are dropped; openapicheck is unchanged.
//     The discriminator of GET /user is not read: its oneOf holds because
//     public-user forbids the properties only private-user has.
//   - Authentication is the token only: Bearer (or "token") on REST, the
//     Basic password on git. After Revoke both answer 401. The token never
//     reaches a violation message, nor git's environment (the
//     Authorization header is removed before http-backend runs).
//   - A pull request's head sha is the bare repository's branch tip, read
//     with git, while it is open; a merge really moves the base branch
//     (a merge or squash commit made with git merge-tree and commit-tree,
//     or a fast-forward for rebase) with a compare-and-swap update-ref.
//   - Nothing outlives the test: Close (at cleanup) wakes stalled requests
//     and waits for every handler.
//
// Pull requests are numbered per repository from 1; the double does no
// forks (a head of another owner is refused with 422). Merging a draft is
// allowed (REST cannot undraft, so jam merges drafts); 405 is for a pull
// request that is closed, conflicts with its base, or (rebase) is behind
// it. Check runs and statuses are pages of per_page (at most 100); check
// runs, like pulls/list, carry a Link header, the combined status only
// total_count, as GitHub's description declares.
package forgetest
