package bandtest_test

import (
	"os"
	"testing"

	"github.com/jamhq/jam/internal/band/bandtest"
)

// TestRealBand runs the suite against a live Band host. It registers agents
// (deleting them again) and creates rooms (Band has no room deletion) under
// the owner, so point it at a test account.
func TestRealBand(t *testing.T) {
	t.Parallel()
	base, key := os.Getenv("JAM_BAND_URL"), os.Getenv("JAM_BAND_OWNER_KEY")
	if base == "" || key == "" {
		t.Skip("set JAM_BAND_URL (e.g. https://app.band.ai) and JAM_BAND_OWNER_KEY (a band_u_… user key of a test account) to run the conformance suite against real Band")
	}
	bandtest.Exercise(t, func(t *testing.T) bandtest.Target {
		return bandtest.Target{BaseURL: base, OwnerKey: key}
	})
}
