package session

import (
	"context"

	gitcli "github.com/jamhq/jam/internal/git"
)

// git runs the git CLI in dir for the tests, which set up and inspect
// repositories with commands the product code has no use for.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitcli.Run(ctx, dir, args...)
}
