package forge_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/forge"
)

// TestGitHub runs the client against api.github.com when opted in with
// JAM_TEST_GITHUB_TOKEN (a token that can read the repository) and
// JAM_TEST_GITHUB_REPO=owner/name. It only reads.
func TestGitHub(t *testing.T) {
	t.Parallel()
	token, name := os.Getenv("JAM_TEST_GITHUB_TOKEN"), os.Getenv("JAM_TEST_GITHUB_REPO")
	if token == "" || name == "" {
		t.Skip("set JAM_TEST_GITHUB_TOKEN and JAM_TEST_GITHUB_REPO=owner/name to run against api.github.com")
	}
	repo, base, err := forge.ParseRemote("https://github.com/" + name + ".git")
	require.NoError(t, err)
	require.Equal(t, forge.DefaultBaseURL, base)
	client, err := forge.New(token, forge.Options{BaseURL: base, UserAgent: "jam-test"})
	require.NoError(t, err)
	ctx := t.Context()

	login, err := client.Authenticated(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, login)

	_, ok, err := client.FindPullRequest(ctx, repo, "jam-test-no-such-branch-7f3a")
	require.NoError(t, err)
	require.False(t, ok)

	bad, err := forge.New("ghp_"+strings.Repeat("0", 36), forge.Options{BaseURL: base, UserAgent: "jam-test"})
	require.NoError(t, err)
	_, err = bad.Authenticated(ctx)
	requireCode(t, err, forge.CodeCredentialInvalid)
	require.NotContains(t, err.Error(), token)
}
