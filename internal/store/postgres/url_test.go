package postgres

import (
	"net/url"
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
		// A password the rest of the URL holds already, as it is or
		// escaped, is shown by the rest, not leaked by the redaction.
		if len(password) < 6 || strings.Contains(user+host+rest, password) || strings.Contains(user+host+rest, url.QueryEscape(password)) {
			t.Skip()
		}
		// In a query the password is a value, escaped as a URL would
		// carry it: an unescaped "&" there would end the value, and what
		// follows is another parameter, not the password.
		q := url.QueryEscape(password)
		for _, raw := range []string{
			"postgres://" + user + ":" + password + "@" + host + rest,
			"postgres://" + user + "@" + host + "/db?x=1&password=" + q,
			"postgresql://" + user + "@" + host + rest + "?sslpassword=" + q,
		} {
			_, _, err := parseURL(raw)
			// The same URL with another password of the same length: text
			// that shows the password there too comes from the rest of the
			// URL or from the message (a host "00000" followed by ": "
			// reads as the password "00000:"), not from the password.
			other := strings.ReplaceAll(raw, password, strings.Repeat("Q", len(password)))
			if len(q) >= 6 {
				other = strings.ReplaceAll(other, q, strings.Repeat("Q", len(q)))
			}
			_, _, otherErr := parseURL(other)
			shownOther := redactURL(other) + " " + errText(otherErr)
			for _, shown := range []string{redactURL(raw), errText(err)} {
				for _, sec := range []string{password, q} {
					if len(sec) >= 6 && strings.Contains(shown, sec) && !strings.Contains(shownOther, sec) {
						t.Fatalf("%q shows the password of %q", shown, raw)
					}
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
