// Package delivery delivers a change set to a remote: a commit of the
// change set built onto its base commit, pushed to a branch with the git
// CLI, and, when asked, one draft pull request on GitHub; then follows
// the pull request and merges it behind gates.
//
// A delivery runs as durable jobs of package job, one per step (build,
// push, pull_request), each idempotent, so a daemon killed at any point
// resumes where the store says the delivery is and ends with exactly one
// branch and at most one pull request:
//
//   - build makes the commit with [git.BuildDeliveryCommit] in a
//     temporary index (never the agent's live worktree), dated at the
//     change set's capture, so a rebuild after a crash makes the same
//     commit; [changeset.VerifyTree] checks its tree against every digest
//     of the manifest before anything leaves the machine;
//   - push creates the branch only (a branch already at the commit is
//     success; one elsewhere is a conflict, never overwritten), with the
//     connection's token fed to git over a pipe, never in argv or a URL;
//   - pull_request finds an open or closed pull request of the branch
//     first and opens a draft only when there is none, so a resumed job
//     never opens a second.
//
// Every step appends evidence to the delivery's operation (start, end or
// error, with the remote SHA, the pull request's number and URL, GitHub's
// request ids) and moves the delivery's row, whose updates are fenced by
// its generation. A failure no retry mends (a refused credential, a branch
// elsewhere, a change set that does not apply) fails the delivery at once
// with a stable code; a transient one (a 5xx, a 429 with Retry-After, a
// timeout) is retried with the job's backoff and shown in the job, and
// fails the delivery once the job's attempts are spent.
//
// Merge is a separate operation: refused, naming the gate, unless the
// delivery's pull request is open, its head is still the delivered
// commit, its checks and combined status are green, and the person
// approved (an explicit yes). GitHub's merge call names the head SHA, so a
// head that moves between the gate and the merge is refused there too.
//
// No secret leaves the service: tokens are read from the connection's
// current credential version at each step and given only to git's
// credential pipe and the GitHub client, which redact them from errors.
package delivery
