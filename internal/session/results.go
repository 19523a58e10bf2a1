package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jamhq/jam/internal/changeset"
	gitcli "github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Results: what turns leave behind. With Config.Results set, every turn
// is bracketed by checkpoints of its session's worktree: turn_start after
// the turn is prepared and before its prompt reaches the agent, turn_end
// once its outcome is in hand (whatever it is). Between the two a change
// set is captured: origin turn when the agent completed the turn, salvage
// when it failed, was cancelled or was interrupted (a turn cut short by a
// restart is salvaged when the daemon starts again). A turn that changed
// nothing records an empty change set. The change set is recorded before
// the turn's answer is settled, so a reply is never seen before what its
// turn changed. A turn whose start checkpoint cannot be taken fails
// before the agent sees it (reason checkpoint_failed): jam does not run
// work it could not capture. A failed end checkpoint or capture is
// logged; the turn's answer still settles, since the work was done.
//
// Before a worktree is archived or removed a request checkpoint records
// its files, so a removed worktree is restored from its last state; an
// active worktree whose directory is gone is made again from the latest
// checkpoint before the next turn (replaceMissing).
// CaptureChangeSet captures on request, from a chosen checkpoint (the
// session's first: everything the session changed) to a new one.
//
// Checkpoints of a worktree of a repository live on refs
// refs/jam/checkpoints/<session>/<seq> of that repository; those of a
// plain directory in a private git directory per session under
// ResultsConfig.PrivateRoot. Credential files are never recorded
// (DefaultExclude, plus ResultsConfig.Exclude).

// ResultsConfig configures checkpoints and change sets.
type ResultsConfig struct {
	// PrivateRoot holds the private git directories of sessions whose
	// worktree is a plain directory (<PrivateRoot>/<session>.git).
	PrivateRoot string
	// Exclude are further globs kept out of every checkpoint, beside
	// DefaultExclude (git.ExcludePathspecs says how they match).
	Exclude []string
	// MaxPatchBytes bounds a change set's stored patch; a larger one is
	// kept as manifest and checkpoints only. 0: DefaultMaxPatchBytes.
	MaxPatchBytes int64
}

// DefaultExclude are the credential files no checkpoint records.
var DefaultExclude = []string{
	".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
	".netrc", "_netrc", ".pgpass", ".git-credentials",
	".aws/credentials", ".aws/config", ".config/gcloud", ".azure", ".docker/config.json", ".kube/config",
}

// DefaultMaxPatchBytes is the stored patch's bound unless configured:
// below the control API client's 16 MiB bound on one response.
const DefaultMaxPatchBytes = 8 << 20

// checkpointTimeout bounds one checkpoint or capture.
const checkpointTimeout = 5 * time.Minute

// ReasonCheckpointFailed ends a turn whose start checkpoint could not be
// taken.
const ReasonCheckpointFailed = "checkpoint_failed"

// Validate checks the configuration: the globs parse and the bound is
// not negative.
func (c ResultsConfig) Validate() error {
	if c.PrivateRoot == "" {
		return fmt.Errorf("%w: results: a private root is required", jam.ErrInvalid)
	}
	if c.MaxPatchBytes < 0 {
		return fmt.Errorf("%w: results: the patch bound %d is negative", jam.ErrInvalid, c.MaxPatchBytes)
	}
	_, _, err := gitcli.ExcludePathspecs(c.Exclude)
	return err
}

func (c ResultsConfig) exclude() []string {
	return append(append([]string{}, DefaultExclude...), c.Exclude...)
}

// checkpoint takes a checkpoint of the session's worktree and records it
// with the next Seq.
func (m *Manager) checkpoint(ctx context.Context, wt store.Worktree, turn jam.TurnID, phase store.CheckpointPhase) (store.Checkpoint, error) {
	rc := m.cfg.Results
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	seq := 1
	latest, err := m.cfg.Store.CheckpointLatest(ctx, m.cfg.Workspace, wt.SessionID)
	switch {
	case err == nil:
		seq = latest.Seq + 1
	case !errors.Is(err, jam.ErrNotFound):
		return store.Checkpoint{}, err
	}
	p := gitcli.SnapshotParams{Repo: wt.Repo, Path: wt.Path, Exclude: rc.exclude(), At: m.cfg.Now(),
		Ref:     "refs/jam/checkpoints/" + string(wt.SessionID) + "/" + strconv.Itoa(seq),
		Message: fmt.Sprintf("jam checkpoint %d of session %s (%s)", seq, wt.SessionID, phase)}
	if turn != "" {
		p.Message += "\n\nJam-Turn: " + string(turn)
	}
	if wt.Repo == "" {
		p.GitDir = filepath.Join(rc.PrivateRoot, string(wt.SessionID)+".git")
		if err := os.MkdirAll(rc.PrivateRoot, 0o700); err != nil {
			return store.Checkpoint{}, err
		}
	}
	snap, err := gitcli.TakeSnapshot(ctx, p)
	if errors.Is(err, jam.ErrAlreadyExists) {
		// The ref of a checkpoint a crash kept from being recorded: Seq
		// is the store's, so the ref is an orphan; it goes.
		gitDir := p.GitDir
		if gitDir == "" {
			gitDir = wt.Repo
		}
		if derr := gitcli.DeleteRef(ctx, gitDir, p.Ref); derr != nil {
			return store.Checkpoint{}, errors.Join(err, derr)
		}
		snap, err = gitcli.TakeSnapshot(ctx, p)
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("checkpoint of %s: %w", wt.SessionID, err)
	}
	return m.cfg.Store.CheckpointInsert(ctx, store.Checkpoint{ID: jam.New[jam.SnapshotID](m.cfg.Minter), WorkspaceID: m.cfg.Workspace,
		SessionID: wt.SessionID, Seq: seq, Turn: turn, Phase: phase, GitDir: snap.GitDir, Ref: snap.Ref,
		Commit: snap.Commit, Tree: snap.Tree, BaseCommit: snap.Base, CreatedAt: m.cfg.Now()})
}

// capture records the change set from base to end.
func (m *Manager) capture(ctx context.Context, base, end store.Checkpoint, turn jam.TurnID, origin store.ChangeSetOrigin) (store.ChangeSet, error) {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	if base.GitDir != end.GitDir {
		return store.ChangeSet{}, fmt.Errorf("%w: checkpoints %d and %d of %s are in different git directories", jam.ErrConflict, base.Seq, end.Seq, end.SessionID)
	}
	max := m.cfg.Results.MaxPatchBytes
	if max == 0 {
		max = DefaultMaxPatchBytes
	}
	cs, err := changeset.Capture(ctx, end.GitDir, base.Commit, end.Commit, changeset.Options{MaxPatchBytes: max})
	if err != nil {
		return store.ChangeSet{}, err
	}
	cs.ID, cs.WorkspaceID, cs.SessionID, cs.Turn, cs.Origin = jam.New[jam.ChangeSetID](m.cfg.Minter), m.cfg.Workspace, end.SessionID, turn, origin
	cs.BaseCheckpoint, cs.EndCheckpoint, cs.CreatedAt = base.ID, end.ID, m.cfg.Now()
	return m.cfg.Store.ChangeSetInsert(ctx, cs)
}

// startResults takes a turn's start checkpoint (nil when results are
// off).
func (m *Manager) startResults(ctx context.Context, wt store.Worktree, t store.Turn) (*store.Checkpoint, error) {
	if m.cfg.Results == nil {
		return nil, nil
	}
	c, err := m.checkpoint(ctx, wt, t.ID, store.CheckpointTurnStart)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// endResults takes the turn's end checkpoint and captures its change set
// with origin; failures are logged (the turn's outcome stands). With
// commit (the agent's commit_turns), a non-empty change set of a
// completed turn of a repository's worktree is committed to its branch.
func (m *Manager) endResults(ctx context.Context, wt store.Worktree, t store.Turn, start *store.Checkpoint, origin store.ChangeSetOrigin, commit bool) {
	if start == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	end, err := m.checkpoint(ctx, wt, t.ID, store.CheckpointTurnEnd)
	if err != nil {
		m.log.Warn("turn end checkpoint not taken", "turn", t.ID, "session", wt.SessionID, "err", err)
		return
	}
	cs, err := m.capture(ctx, *start, end, t.ID, origin)
	if err != nil {
		m.log.Warn("turn change set not captured", "turn", t.ID, "session", wt.SessionID, "err", err)
		return
	}
	m.log.Info("change set captured", "turn", t.ID, "changeset", cs.ID, "origin", string(origin),
		"files", len(cs.Files), "additions", cs.Additions, "deletions", cs.Deletions)
	if commit && origin == store.ChangeSetTurn && !cs.Empty() && wt.Repo != "" {
		if err := m.commitTurn(ctx, wt, t, cs, end); err != nil {
			m.log.Warn("turn not committed", "turn", t.ID, "changeset", cs.ID, "err", err)
		}
	}
}

// commitTurn commits the end checkpoint's tree (the worktree's files, no
// credential file among them) to the session's branch, with trailers
// naming the session, turn and change set, so git log attributes the
// work to its turn.
func (m *Manager) commitTurn(ctx context.Context, wt store.Worktree, t store.Turn, cs store.ChangeSet, end store.Checkpoint) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	files := "1 file"
	if len(cs.Files) != 1 {
		files = strconv.Itoa(len(cs.Files)) + " files"
	}
	msg := fmt.Sprintf("jam: turn %s (%s changed, +%d -%d)\n\nJam-Session: %s\nJam-Turn: %s\nJam-ChangeSet: %s\nJam-Subject-Digest: %s\n",
		t.ID, files, cs.Additions, cs.Deletions, wt.SessionID, t.ID, cs.ID, cs.SubjectDigest)
	commit, err := gitcli.CommitTree(ctx, gitcli.CommitTreeParams{Repo: wt.Repo, Path: wt.Path, Branch: wt.Branch, Tree: end.Tree, Message: msg, At: m.cfg.Now()})
	if err != nil {
		return err
	}
	m.log.Info("turn committed", "turn", t.ID, "changeset", cs.ID, "branch", wt.Branch, "commit", commit)
	return nil
}

// salvageInterrupted captures what a turn the daemon's stop cut short
// left in its worktree, as salvage: called at start, before the turn is
// marked interrupted. Nothing when results are off, the turn has no
// start checkpoint, or its worktree is not active.
func (m *Manager) salvageInterrupted(ctx context.Context, s store.Session, t store.Turn) {
	if m.cfg.Results == nil {
		return
	}
	wt, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, s.ID)
	if err != nil || wt.State != store.WorktreeActive {
		return
	}
	list, err := m.cfg.Store.CheckpointList(ctx, m.cfg.Workspace, s.ID)
	if err != nil {
		m.log.Warn("interrupted turn not salvaged", "turn", t.ID, "err", err)
		return
	}
	var start *store.Checkpoint
	for i := range list {
		c := list[i]
		if c.Turn == t.ID && c.Phase == store.CheckpointTurnStart {
			start = &c
		}
		if c.Turn == t.ID && c.Phase == store.CheckpointTurnEnd {
			return // captured before the crash: done
		}
	}
	if start == nil {
		return
	}
	m.endResults(ctx, wt, t, start, store.ChangeSetSalvage, false)
}

// requestCheckpoint records the worktree's files before an archive or a
// remove (nothing when results are off or the directory is gone).
func (m *Manager) requestCheckpoint(ctx context.Context, wt store.Worktree) error {
	if m.cfg.Results == nil || wt.State != store.WorktreeActive {
		return nil
	}
	if _, err := os.Stat(wt.Path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, err := m.checkpoint(ctx, wt, "", store.CheckpointRequest)
	return err
}

// replaceMissing makes again an active worktree whose directory is gone
// (removed behind jam's back): from the session's latest checkpoint,
// byte for byte, or, for a session without one, as Restore makes it (the
// branch checked out again, or anew from HEAD). Called with the session
// held, before a turn.
func (m *Manager) replaceMissing(ctx context.Context, wt store.Worktree) error {
	if _, err := os.Lstat(wt.Path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	from, err := m.restorePoint(ctx, wt.SessionID, 0)
	if err != nil {
		return err
	}
	if from != nil {
		m.log.Warn("the session's worktree is gone: restoring it from its latest checkpoint", "session", wt.SessionID, "path", wt.Path, "checkpoint", from.Seq)
	} else {
		m.log.Warn("the session's worktree is gone and it has no checkpoint: making it anew", "session", wt.SessionID, "path", wt.Path)
	}
	if err := restoreFrom(from)(ctx, wt); err != nil {
		return fmt.Errorf("worktree of %s is gone and could not be made again: %w", wt.SessionID, err)
	}
	return nil
}

// CaptureChangeSet captures, on request, the change set of a session's
// worktree from its checkpoint since (a Seq; 0: its first checkpoint,
// so everything the session changed) to a checkpoint taken now. It waits
// for nothing: while a turn of the session runs it is refused
// (jam.ErrConflict), as it is for a worktree that is not active or a
// session without checkpoints; an unknown since is jam.ErrNotFound.
func (m *Manager) CaptureChangeSet(ctx context.Context, session jam.SessionID, since int) (store.ChangeSet, error) {
	if m.cfg.Results == nil {
		return store.ChangeSet{}, fmt.Errorf("%w: change sets are not recorded by this daemon", jam.ErrUnavailable)
	}
	if since < 0 {
		return store.ChangeSet{}, fmt.Errorf("%w: since %d: checkpoints are numbered from 1", jam.ErrInvalid, since)
	}
	if _, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, session); err != nil {
		return store.ChangeSet{}, err
	}
	if !m.hold(session, holdWorktree) {
		return store.ChangeSet{}, fmt.Errorf("%w: session %s is busy: a turn is running or a worktree operation is under way (wait for it, or cancel the turn with jam turn cancel)", jam.ErrConflict, session)
	}
	defer func() {
		m.release(session)
		m.wakeSession(session)
	}()
	wt, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, session)
	if errors.Is(err, jam.ErrNotFound) {
		return store.ChangeSet{}, fmt.Errorf("%w: session %s has no worktree yet (it has run no turn)", jam.ErrConflict, session)
	}
	if err != nil {
		return store.ChangeSet{}, err
	}
	if wt.State != store.WorktreeActive {
		return store.ChangeSet{}, fmt.Errorf("%w: the worktree of %s is %s (restore it with jam worktree restore)", jam.ErrConflict, session, wt.State)
	}
	list, err := m.cfg.Store.CheckpointList(ctx, m.cfg.Workspace, session)
	if err != nil {
		return store.ChangeSet{}, err
	}
	if len(list) == 0 {
		return store.ChangeSet{}, fmt.Errorf("%w: session %s has no checkpoint to capture from (it has run no turn)", jam.ErrConflict, session)
	}
	base := list[0]
	if since > 0 {
		if base, err = numbered(list, session, since); err != nil {
			return store.ChangeSet{}, err
		}
	}
	ctx = context.WithoutCancel(ctx)
	end, err := m.checkpoint(ctx, wt, "", store.CheckpointRequest)
	if err != nil {
		return store.ChangeSet{}, err
	}
	return m.capture(ctx, base, end, "", store.ChangeSetRequest)
}
