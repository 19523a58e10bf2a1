package forge_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/forge"
	"github.com/jamhq/jam/internal/jam"
)

func TestParseRemote(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, remote string
		want         forge.Repo
		wantBase     string
		wantErr      string // empty: no error
	}{
		{name: "github", remote: "https://github.com/jamhq/jam", want: forge.Repo{"jamhq", "jam"}, wantBase: "https://api.github.com/"},
		{name: "dot git", remote: "https://github.com/jamhq/jam.git", want: forge.Repo{"jamhq", "jam"}, wantBase: "https://api.github.com/"},
		{name: "trailing slash", remote: "https://github.com/jamhq/jam/", want: forge.Repo{"jamhq", "jam"}, wantBase: "https://api.github.com/"},
		{name: "host case", remote: "https://GitHub.COM/o/r", want: forge.Repo{"o", "r"}, wantBase: "https://api.github.com/"},
		{name: "www", remote: "https://www.github.com/o/r", want: forge.Repo{"o", "r"}, wantBase: "https://api.github.com/"},
		{name: "dots in name", remote: "https://github.com/o/my.repo.js.git", want: forge.Repo{"o", "my.repo.js"}, wantBase: "https://api.github.com/"},
		{name: "enterprise", remote: "https://ghe.example.com/team/svc.git", want: forge.Repo{"team", "svc"}, wantBase: "https://ghe.example.com/api/v3/"},
		{name: "enterprise port", remote: "https://ghe.example.com:8443/team/svc", want: forge.Repo{"team", "svc"}, wantBase: "https://ghe.example.com:8443/api/v3/"},
		{name: "userinfo token", remote: "https://x-access-token:ghp_SECRET@github.com/o/r.git", wantErr: "userinfo"},
		{name: "userinfo user", remote: "https://ghp_SECRET@github.com/o/r.git", wantErr: "userinfo"},
		{name: "userinfo empty", remote: "https://@github.com/o/r", wantErr: "userinfo"},
		{name: "http", remote: "http://github.com/o/r", wantErr: "scheme"},
		{name: "ssh", remote: "ssh://git@github.com/o/r.git", wantErr: "userinfo"},
		{name: "scp form", remote: "git@github.com:o/r.git", wantErr: "not a URL"},
		{name: "relative", remote: "o/r", wantErr: "scheme"},
		{name: "empty", remote: "", wantErr: "scheme"},
		{name: "no repo", remote: "https://github.com/o", wantErr: "path"},
		{name: "too deep", remote: "https://github.com/o/r/tree/main", wantErr: "path"},
		{name: "query", remote: "https://github.com/o/r?x=1", wantErr: "query"},
		{name: "fragment", remote: "https://github.com/o/r#x", wantErr: "query"},
		{name: "empty owner", remote: "https://github.com//r", wantErr: "owner"},
		{name: "bad owner", remote: "https://github.com/-o/r", wantErr: "owner"},
		{name: "only .git", remote: "https://github.com/o/.git", wantErr: "repository name"},
		{name: "double .git", remote: "https://github.com/o/r.git.git", wantErr: "repository name"},
		{name: "dotdot", remote: "https://github.com/o/..", wantErr: "repository name"},
		{name: "space", remote: "https://github.com/o/r%20x", wantErr: "repository name"},
		{name: "no host", remote: "https:///o/r", wantErr: "host"},
		{name: "bad host", remote: "https://exa_mple.com/o/r", wantErr: "host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, base, err := forge.ParseRemote(tc.remote)
			if tc.wantErr != "" {
				require.Error(t, err)
				require.ErrorIs(t, err, jam.ErrInvalid)
				var fe *forge.Error
				require.True(t, errors.As(err, &fe))
				require.Equal(t, forge.CodeInvalid, fe.Code)
				require.Contains(t, err.Error(), tc.wantErr)
				require.NotContains(t, err.Error(), "SECRET")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, repo)
			require.Equal(t, tc.wantBase, base)
		})
	}
}

func FuzzParseRemote(f *testing.F) {
	for _, s := range []string{
		"https://github.com/jamhq/jam.git", "https://ghe.example.com:8443/team/svc", "https://u:p@github.com/o/r",
		"http://github.com/o/r", "git@github.com:o/r.git", "https://github.com/o/r/", "https://github.com/o/r?x",
		"https://GITHUB.com/o/.git", "https://h/%2e%2e/r", "",
	} {
		f.Add(s)
	}
	// The refusal's own words: a secret that is part of them ("thub" of
	// "github") is no leak.
	_, _, refusal := forge.ParseRemote("https://u:p@github.com/o/r")
	require.Error(f, refusal)
	leaks := func(msg, secret string) bool {
		return len(secret) >= 4 && strings.Contains(msg, secret) && !strings.Contains(refusal.Error(), secret)
	}
	f.Fuzz(func(t *testing.T, remote string) {
		repo, base, err := forge.ParseRemote(remote)
		u, perr := url.Parse(remote)
		if perr == nil && u.User != nil {
			require.Error(t, err, "a URL with userinfo must be refused")
			if p, ok := u.User.Password(); ok {
				require.False(t, leaks(err.Error(), p), "the password is in %q", err)
			}
			require.False(t, leaks(err.Error(), u.User.Username()), "the user name is in %q", err)
		}
		if err != nil {
			require.ErrorIs(t, err, jam.ErrInvalid)
			return
		}
		require.NotEmpty(t, repo.Owner)
		require.NotEmpty(t, repo.Name)
		require.NotContains(t, repo.Owner+repo.Name, "/")
		require.False(t, strings.HasSuffix(repo.Name, ".git"))
		require.True(t, strings.HasPrefix(base, "https://") && strings.HasSuffix(base, "/"))
		// What it read parses again to the same.
		again, base2, err := forge.ParseRemote("https://" + u.Host + "/" + repo.Owner + "/" + repo.Name)
		require.NoError(t, err)
		require.Equal(t, repo, again)
		require.Equal(t, base, base2)
	})
}
