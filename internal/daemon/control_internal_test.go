package daemon

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band"
)

// TestTaken: Band's refusal of a name in use (422, "has already been
// taken", in the message or the details) is recognised; other 422s and
// other errors are not.
func TestTaken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&band.Error{Status: 422, Code: "validation_error", Message: "Validation failed: /agent/name has already been taken"}, true},
		{fmt.Errorf("register: %w", &band.Error{Status: 422, Message: "Validation failed", Details: map[string][]string{"name": {"has already been taken"}}}), true},
		{&band.Error{Status: 422, Message: "Validation failed: /agent/name is too long"}, false},
		{&band.Error{Status: 409, Message: "has already been taken"}, false},
		{errors.New("has already been taken"), false},
		{nil, false},
	} {
		require.Equal(t, tc.want, taken(tc.err), "%v", tc.err)
	}
}
