package daemon

import (
	"context"
	"fmt"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// ChangeSets implements api.Results.
func (d *daemon) ChangeSets(ctx context.Context, q wire.ChangeSetQuery) ([]wire.ChangeSet, error) {
	p := store.ChangeSetListParams{WorkspaceID: d.workspace.ID, Limit: q.Limit}
	if p.Limit == 0 {
		p.Limit = wire.DefaultChangeSetLimit
	}
	if q.Session != "" {
		id, err := d.sessionRef(ctx, q.Session)
		if err != nil {
			return nil, err
		}
		if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
			return nil, err
		}
		p.SessionID = id
	}
	if q.Turn != "" {
		id, err := d.turnRef(ctx, q.Turn)
		if err != nil {
			return nil, err
		}
		p.Turn = id
	}
	list, err := d.store.ChangeSetList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]wire.ChangeSet, 0, len(list))
	for _, cs := range list {
		out = append(out, wireChangeSet(cs))
	}
	return out, nil
}

// ChangeSet implements api.Results.
func (d *daemon) ChangeSet(ctx context.Context, ref string) (wire.ChangeSet, error) {
	cs, err := d.changeSet(ctx, ref)
	if err != nil {
		return wire.ChangeSet{}, err
	}
	return wireChangeSet(cs), nil
}

// ChangeSetPatch implements api.Results.
func (d *daemon) ChangeSetPatch(ctx context.Context, ref string) ([]byte, error) {
	cs, err := d.changeSet(ctx, ref)
	if err != nil {
		return nil, err
	}
	if cs.PatchOmitted {
		return nil, fmt.Errorf("%w: the patch of %s (%d bytes) was over the bound and is not kept; its checkpoints' commits %s and %s reproduce it (git diff --binary --full-index %s %s)",
			jam.ErrInvalid, cs.ID, cs.PatchBytes, short12(cs.BaseCommit), short12(cs.EndCommit), cs.BaseCommit, cs.EndCommit)
	}
	if cs.Patch == nil {
		return []byte{}, nil
	}
	return cs.Patch, nil
}

// changeSet resolves ref (a whole id, or a unique prefix among the
// workspace's latest change sets) and reads the change set with its patch.
func (d *daemon) changeSet(ctx context.Context, ref string) (store.ChangeSet, error) {
	id, err := jam.ParseID[jam.ChangeSetID](ref)
	if err != nil {
		list, lerr := d.store.ChangeSetList(ctx, store.ChangeSetListParams{WorkspaceID: d.workspace.ID, Limit: wire.MaxChangeSetLimit})
		if lerr != nil {
			return store.ChangeSet{}, lerr
		}
		cands := make([]jam.RefCandidate, 0, len(list))
		for _, cs := range list {
			cands = append(cands, jam.RefCandidate{ID: string(cs.ID)})
		}
		picked, perr := jam.PickRef("change set", ref, jam.WithPrefix(jam.ChangeSetID("").Prefix(), ref), cands)
		if perr != nil {
			return store.ChangeSet{}, perr
		}
		id = jam.ChangeSetID(picked)
	}
	return d.store.ChangeSetGet(ctx, d.workspace.ID, id)
}

// CaptureChangeSet implements api.Results: the session manager takes a
// checkpoint of the session's worktree and captures the change set from
// its checkpoint since (0: its first) to that one.
func (d *daemon) CaptureChangeSet(ctx context.Context, session string, since int) (wire.ChangeSet, error) {
	id, err := d.sessionRef(ctx, session)
	if err != nil {
		return wire.ChangeSet{}, err
	}
	if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
		return wire.ChangeSet{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.ChangeSet{}, err
	}
	return recorded(d, ctx, opCapture, string(id), func() (wire.ChangeSet, error) {
		cs, err := rt.CaptureChangeSet(ctx, id, since)
		if err != nil {
			return wire.ChangeSet{}, err
		}
		return wireChangeSet(cs), nil
	}, func(cs wire.ChangeSet) map[string]any {
		return map[string]any{"change_set": cs.ID, "files": len(cs.Files), "additions": cs.Additions, "deletions": cs.Deletions}
	})
}

// Checkpoints implements api.Results.
func (d *daemon) Checkpoints(ctx context.Context, session string) ([]wire.Checkpoint, error) {
	id, err := d.sessionRef(ctx, session)
	if err != nil {
		return nil, err
	}
	if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
		return nil, err
	}
	list, err := d.store.CheckpointList(ctx, d.workspace.ID, id)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Checkpoint, 0, len(list))
	for _, c := range list {
		out = append(out, wire.Checkpoint{ID: string(c.ID), Session: string(c.SessionID), Seq: c.Seq, Turn: string(c.Turn), Phase: string(c.Phase),
			Ref: c.Ref, Commit: c.Commit, BaseCommit: c.BaseCommit, Created: c.CreatedAt})
	}
	return out, nil
}

// wireChangeSet is cs as the API shows it, without its patch.
func wireChangeSet(cs store.ChangeSet) wire.ChangeSet {
	w := wire.ChangeSet{ID: string(cs.ID), Session: string(cs.SessionID), Turn: string(cs.Turn), Origin: string(cs.Origin),
		BaseCheckpoint: string(cs.BaseCheckpoint), EndCheckpoint: string(cs.EndCheckpoint), BaseCommit: cs.BaseCommit, EndCommit: cs.EndCommit,
		Files: make([]wire.ChangeSetFile, 0, len(cs.Files)), Additions: cs.Additions, Deletions: cs.Deletions,
		PatchBytes: cs.PatchBytes, PatchOmitted: cs.PatchOmitted, SubjectDigest: cs.SubjectDigest, Created: cs.CreatedAt}
	for _, f := range cs.Files {
		w.Files = append(w.Files, wire.ChangeSetFile{Path: f.Path, OldPath: f.OldPath, Kind: string(f.Kind), OldMode: gitMode(f.OldMode), NewMode: gitMode(f.NewMode),
			OldSHA256: f.OldSHA256, NewSHA256: f.NewSHA256, Size: f.Size, Binary: f.Binary, Symlink: f.Symlink, Additions: f.Additions, Deletions: f.Deletions})
	}
	return w
}

// gitMode is a file mode as git prints it ("100644"), or "" for none.
func gitMode(m uint32) string {
	if m == 0 {
		return ""
	}
	return fmt.Sprintf("%06o", m)
}

func short12(commit string) string { return commit[:min(12, len(commit))] }
