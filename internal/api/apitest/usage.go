package apitest

import (
	"context"

	"github.com/jamhq/jam/internal/api/wire"
)

func (f Backend) Usage(ctx context.Context, r wire.UsageRequest) (wire.UsageReport, error) {
	if f.UsageFunc == nil {
		return wire.UsageReport{}, ErrUnset
	}
	return f.UsageFunc(ctx, r)
}
