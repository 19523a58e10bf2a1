package postgres

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jamhq/jam/internal/jam"
)

// location is where a store connects, without credentials.
type location struct {
	host     string
	port     uint16
	database string
	user     string // shown only in authentication errors
}

func (l location) hostPort() string {
	if strings.HasPrefix(l.host, "/") { // a Unix socket directory
		return l.host
	}
	return net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))
}

// String is host:port/database, the Location of store.Info.
func (l location) String() string { return l.hostPort() + "/" + l.database }

// parseURL parses a postgres:// or postgresql:// URL with pgx's
// ParseConfig. Only the URL form is accepted (not key=value DSNs), so
// that one redaction rule covers every input. An error wraps
// jam.ErrInvalid and its text never holds the password: it names the URL
// as redactURL prints it, and pgx's reason with every spelling of the
// password masked.
func parseURL(raw string) (*pgxpool.Config, location, error) {
	if raw == "" {
		return nil, location{}, invalidURL("", "the url is empty")
	}
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "postgres" && scheme != "postgresql") {
		return nil, location{}, invalidURL(redactURL(raw), "want postgres://user@host:port/database")
	}
	pc, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, location{}, invalidURL(redactURL(raw), parseReason(raw, err))
	}
	cc := pc.ConnConfig
	if cc.Database == "" {
		return nil, location{}, invalidURL(redactURL(raw), "the url names no database")
	}
	return pc, location{host: cc.Host, port: cc.Port, database: cc.Database, user: cc.User}, nil
}

// invalidURL is the one-line error of a URL that does not parse.
func invalidURL(shown, reason string) error {
	if shown == "" {
		return fmt.Errorf("postgres store: invalid url: %s: %w", reason, jam.ErrInvalid)
	}
	return fmt.Errorf("postgres store: invalid url %s: %s: %w", shown, reason, jam.ErrInvalid)
}

// parseReason is why pgx refused raw, with every secret of raw masked.
// pgx's ParseConfigError quotes the connection string (redacted on a
// best-effort basis only) and wraps errors that quote it again (net/url's
// *url.Error): the text of neither is used, only the reason under them.
func parseReason(raw string, err error) string {
	var reason string
	var pce *pgconn.ParseConfigError
	if errors.As(err, &pce) {
		full := pce.Error()
		inner := pce.Unwrap()
		var ue *url.Error
		if errors.As(inner, &ue) {
			inner = ue.Err
		}
		// The text is "cannot parse `CONN`: MSG" or "… MSG (INNER)".
		if pce.Unwrap() != nil {
			full = strings.TrimSuffix(full, " ("+pce.Unwrap().Error()+")")
		}
		if i := strings.LastIndex(full, "`: "); i >= 0 {
			reason = full[i+3:]
		} else {
			reason = "cannot be parsed"
		}
		// The inner error names what it refused, quoting a piece of the
		// input that may hold part of a password (and a password with a
		// quote in it would pair the quotes wrongly for the masking
		// below): it is shown only when it quotes nothing.
		if inner != nil && !strings.ContainsAny(inner.Error(), "\"`'") {
			reason += " (" + inner.Error() + ")"
		}
	} else {
		reason = err.Error()
	}
	return maskSecrets(quoted.ReplaceAllString(reason, `"…"`), raw, "cannot be parsed")
}

// quoted matches a double-quoted part of an error text: pgx and the
// packages under it quote the piece of the input they refused, which may
// be part of a password of any length, so such a piece is never shown.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// minSecret is the shortest secret maskSecrets looks for: shorter ones
// match ordinary text, and the structural redaction has removed them.
const minSecret = 4

// maskSecrets replaces in text every occurrence of a secret of raw (its
// userinfo password and password query values, as written and decoded);
// if one still shows, it returns fallback instead.
func maskSecrets(text, raw, fallback string) string {
	secs := secrets(raw)
	for _, sec := range secs {
		if len(sec) >= minSecret {
			text = strings.ReplaceAll(text, sec, "xxxxx")
		}
	}
	for _, sec := range secs {
		if len(sec) >= minSecret && strings.Contains(text, sec) {
			return fallback
		}
	}
	return text
}

// secrets lists the strings of raw that may be a password, longest first
// so that masking one never leaves part of a longer one.
func secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if d, err := url.PathUnescape(s); err == nil && d != s && d != "" {
			out = append(out, d)
		}
		if d, err := url.QueryUnescape(s); err == nil && d != s && d != "" {
			out = append(out, d)
		}
		if q := strconv.Quote(s); q[1:len(q)-1] != s {
			out = append(out, q[1:len(q)-1])
		}
	}
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
			add(pw)
		}
	}
	for _, v := range queryPasswords(raw) {
		add(v)
	}
	// Longest first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// isPasswordParam reports whether a query parameter ("key=value", raw)
// may hold a secret: pgx reads password and sslpassword, and any
// parameter that mentions "pass" anywhere, decoded or not, is treated as
// one too (a value such as "disable?sslpassword=…" included).
func isPasswordParam(kv string) bool {
	if d, err := url.QueryUnescape(kv); err == nil && strings.Contains(strings.ToLower(d), "pass") {
		return true
	}
	return strings.Contains(strings.ToLower(kv), "pass")
}

// queryPasswords returns the raw values of the parameters of raw that
// may be passwords, wherever they are: raw is split at every '?', '&' and
// '#', so a parameter in a fragment, or after a second '?', counts too.
func queryPasswords(raw string) []string {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return nil
	}
	var out []string
	for _, kv := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == '?' || r == '#' }) {
		if _, v, _ := strings.Cut(kv, "="); isPasswordParam(kv) {
			out = append(out, v)
		}
	}
	return out
}

// redactURL prints raw without any password: the userinfo keeps only the
// user name (everything from the first ':' up to the last '@' is masked,
// so a password holding '@' or '/' is covered), the value of every
// parameter that may be a password is masked, and the fragment, which
// pgx ignores, is dropped. Text that is not a URL prints as nothing.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	rest, _, _ = strings.Cut(rest, "#")
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		user, _, hasPW := strings.Cut(rest[:i], ":")
		if hasPW {
			user += ":xxxxx"
		}
		rest = user + "@" + rest[i+1:]
	}
	if head, q, ok := strings.Cut(rest, "?"); ok {
		parts := strings.Split(q, "&")
		for i, kv := range parts {
			if k, _, _ := strings.Cut(kv, "="); isPasswordParam(kv) {
				parts[i] = k + "=xxxxx"
			}
		}
		rest = head + "?" + strings.Join(parts, "&")
	}
	return maskSecrets(scheme+"://"+rest, raw, scheme+"://…")
}
