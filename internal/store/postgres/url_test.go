package postgres

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://jam:pw@db:5432/jam", "postgres://jam:xxxxx@db:5432/jam"},
		{"postgres://jam@db/jam", "postgres://jam@db/jam"},
		{"postgres://db/jam", "postgres://db/jam"},
		{"postgresql://jam:p@ss:w/rd@db/jam", "postgresql://jam:xxxxx@db/jam"},
		{"postgres://jam:pw@db/jam?sslmode=disable&password=pw2", "postgres://jam:xxxxx@db/jam?sslmode=disable&password=xxxxx"},
		{"postgres://db/jam?sslpassword=x&PassWord=y&pass%77ord=z", "postgres://db/jam?sslpassword=xxxxx&PassWord=xxxxx&pass%77ord=xxxxx"},
		{"host=db password=pw", ""},
		{"", ""},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, redactURL(tc.in), tc.in)
	}
}

func TestParseURL(t *testing.T) {
	pc, loc, err := parseURL("postgres://jam:pw@db.example:6543/jamdb?sslmode=disable")
	require.NoError(t, err)
	require.Equal(t, "db.example:6543/jamdb", loc.String())
	require.Equal(t, "jam", loc.user)
	require.Equal(t, "pw", pc.ConnConfig.Password)
}

// FuzzParseURL: whatever the URL, an error from parseURL and the
// redacted URL never contain the password of the userinfo or of a
// password query value.
func FuzzParseURL(f *testing.F) {
	f.Add("jam", "Hunter2-s3cret", "db:5432", "/jam?sslmode=disable")
	f.Add("jam", "p@ss/w:rd", "db:port", "/jam")
	f.Add("", "pw%zzpw", "db", "/jam?password=")
	f.Add("jam", "secret", "[::1", "/jam")
	f.Add("u", "s3cret%40x", "h", "/d?sslpassword=s3cret%40x")
	f.Fuzz(func(t *testing.T, user, password, host, rest string) {
		if len(password) < 6 || strings.Contains(user+host+rest, password) {
			t.Skip()
		}
		for _, raw := range []string{
			"postgres://" + user + ":" + password + "@" + host + rest,
			"postgres://" + user + "@" + host + "/db?x=1&password=" + password,
			"postgresql://" + user + "@" + host + rest + "?sslpassword=" + password,
		} {
			_, _, err := parseURL(raw)
			red := redactURL(raw)
			for _, shown := range []string{red, errText(err)} {
				if strings.Contains(shown, password) {
					t.Fatalf("%q shows the password of %q", shown, raw)
				}
			}
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
