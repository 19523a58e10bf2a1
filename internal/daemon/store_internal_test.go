package daemon

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/config"
)

func TestRedactStore(t *testing.T) {
	t.Parallel()
	cases := []struct {
		store, msg, want string
	}{
		{"sqlite", "open s3cret", "open s3cret"},
		{"postgres://jam:s3cret@h/db", "no s3cret here", "no xxxxx here"},
		{"postgres://jam:p%40ss%2Fw@h/db", "p@ss/w and p%40ss%2Fw", "xxxxx and xxxxx"},
		{"postgres://jam@h/db?sslmode=disable&password=hunter22", "hunter22!", "xxxxx!"},
		{"postgresql://jam:abc@h/db", "abc is too short to mask", "abc is too short to mask"},
		{"postgres://a:b:c@d@h/db", "b:c@d", "xxxxx"},
	}
	for _, tc := range cases {
		d := &daemon{cfg: config.Config{Store: tc.store}}
		require.Equal(t, tc.want, d.redactStore(tc.msg), tc.store)
	}
}

// FuzzRedactStore: for any store URL, its userinfo password (of 4 bytes
// or more), raw or decoded, does not survive redaction.
func FuzzRedactStore(f *testing.F) {
	f.Add("jam", "s3cret-pw", "db")
	f.Add("j", "p%40ss", "d?password=zzzz")
	f.Add("", "@@@@", "")
	f.Fuzz(func(t *testing.T, user, pw, rest string) {
		raw := "postgres://" + user + ":" + pw + "@h/" + rest
		if strings.Contains(user+pw+rest, "@") {
			return // the userinfo ends at the last '@': pw is not the password
		}
		// The password is everything after the userinfo's first ':'.
		_, pw, _ = strings.Cut(user+":"+pw, ":")
		d := &daemon{cfg: config.Config{Store: raw}}
		got := d.redactStore("a " + pw + " b " + raw)
		if len(pw) >= 4 && strings.Contains(got, pw) {
			t.Fatalf("password %q shows in %q", pw, got)
		}
		if dec, err := url.PathUnescape(pw); err == nil && len(dec) >= 4 && strings.Contains(d.redactStore("c "+dec), dec) {
			t.Fatalf("decoded password %q survives redaction", dec)
		}
	})
}
