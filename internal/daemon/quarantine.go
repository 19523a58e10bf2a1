package daemon

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

// Quarantine implements api.Backend.
func (d *daemon) Quarantine(ctx context.Context) ([]wire.QuarantinedRecord, error) {
	recs, err := d.store.QuarantineList(ctx, d.workspace.ID, 0)
	if err != nil {
		return nil, err
	}
	out := make([]wire.QuarantinedRecord, len(recs))
	for i, r := range recs {
		out[i] = wire.QuarantinedRecord{ID: r.ID, Source: r.Source, Seq: r.Seq, Peer: r.Peer.Profile + "/" + r.Peer.Scope,
			Room: string(r.Room), MessageID: string(r.MessageID), Reason: r.Reason, QuarantinedAt: r.QuarantinedAt, SealedBytes: len(r.Sealed)}
	}
	return out, nil
}
