package daemon_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/delivery"
	"github.com/jamhq/jam/internal/jam"
)

// TestDeliveryCodesAreTheCatalogues: the failure codes a delivery stores
// (and GET /v1/operations shows) are the API catalogue's, the same the API
// would answer for the same error.
func TestDeliveryCodesAreTheCatalogues(t *testing.T) {
	t.Parallel()
	for _, sentinel := range []error{jam.ErrCredentialInvalid, jam.ErrUnreachable, jam.ErrGateRefused, jam.ErrInvalid, jam.ErrNotFound,
		jam.ErrConflict, jam.ErrPermissionDenied, jam.ErrUnavailable, context.DeadlineExceeded, fmt.Errorf("anything else")} {
		err := fmt.Errorf("step: %w", sentinel)
		code := delivery.Code(err)
		require.Equal(t, string(api.Code(err)), code, "%v", sentinel)
		require.True(t, slices.Contains(wire.Codes, wire.Code(code)), "%s is in the catalogue", code)
	}
	// A remote's refusal of a token is the credential's fault, not the caller's.
	require.Equal(t, "credential_invalid", delivery.Code(jam.ErrUnauthenticated))
}
