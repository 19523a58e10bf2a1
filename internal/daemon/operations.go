package daemon

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The kinds of the operations the daemon runs in the request that asks
// for them (the delivery service runs deliver and merge on jobs).
const (
	opCapture         = "capture"
	opWorktreeArchive = "worktree_archive"
	opWorktreeRemove  = "worktree_remove"
	opWorktreeRestore = "worktree_restore"
)

// maxOperationText bounds an error recorded on an operation.
const maxOperationText = store.MaxOperationError

// recorded runs f as an operation of kind on subject: the operation is
// stored running with a start entry, then ends succeeded with summary of
// f's answer as its result, or failed with the catalogue code of f's
// error, each with its evidence. f's answer is returned as it is: the
// record is for the person (jam operation list), and failing to write it
// only logs.
func recorded[T any](d *daemon, ctx context.Context, kind, subject string, f func() (T, error), summary func(T) map[string]any) (T, error) {
	ws := d.workspace.ID
	id := jam.New[jam.OperationID](d.minter)
	line := "running"
	_, err := d.store.OperationCreate(ctx, store.Operation{ID: id, WorkspaceID: ws, Kind: kind, Subject: subject, State: store.OperationRunning,
		Progress: line, CreatedAt: time.Now()})
	if err != nil {
		d.log.Warn("record operation", "kind", kind, "subject", subject, "err", err)
		return f()
	}
	note := func(ev store.EvidenceEvent, detail map[string]any) {
		b, _ := json.Marshal(detail)
		if _, err := d.store.EvidenceAppend(ctx, store.Evidence{OperationID: id, WorkspaceID: ws, Step: kind, Event: ev, Detail: b, At: time.Now()}); err != nil {
			d.log.Warn("record operation evidence", "operation", id, "err", err)
		}
	}
	note(store.EvidenceStart, map[string]any{"subject": subject})
	out, ferr := f()
	p := store.OperationUpdateParams{WorkspaceID: ws, ID: id, State: store.OperationSucceeded, At: time.Now()}
	if ferr != nil {
		msg := []rune(ferr.Error())
		if len(msg) > maxOperationText/4 {
			msg = msg[:maxOperationText/4]
		}
		p.State, p.ErrorCode, p.Error = store.OperationFailed, string(api.Code(ferr)), string(msg)
		note(store.EvidenceError, map[string]any{"code": p.ErrorCode, "error": p.Error})
	} else {
		sum := summary(out)
		p.Result, _ = json.Marshal(sum)
		note(store.EvidenceEnd, sum)
	}
	line = string(p.State)
	p.Progress = &line
	if _, err := d.store.OperationUpdate(ctx, p); err != nil {
		d.log.Warn("end operation", "operation", id, "err", err)
	}
	return out, ferr
}

// Operations implements api.Deliveries.
func (d *daemon) Operations(ctx context.Context, q wire.OperationQuery) ([]wire.Operation, error) {
	list, err := d.store.OperationList(ctx, store.OperationListParams{WorkspaceID: d.workspace.ID, Kind: q.Kind, Subject: q.Subject, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]wire.Operation, 0, len(list))
	for _, op := range list {
		out = append(out, wireOperation(op, nil))
	}
	return out, nil
}
