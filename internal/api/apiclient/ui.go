package apiclient

import (
	"context"
	"net/http"

	"github.com/jamhq/jam/internal/api/wire"
)

// UILogin mints a one-time sign-in link to the daemon's web UI.
func (c *Client) UILogin(ctx context.Context) (wire.UILogin, error) {
	var out wire.UILogin
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/ui/login"}, &out)
	return out, err
}
