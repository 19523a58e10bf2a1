package band

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// redactURL returns err with every URL it quotes (each [*url.Error] in its
// chain) cut to scheme, host and path: no query, fragment or userinfo,
// where a credential could ride. An error without one is returned as is.
//
// The message is rewritten whole, because the layers that wrapped the
// [*url.Error] rendered its text when they wrapped it. The result unwraps
// to a copy of the first [*url.Error] with its URL redacted (the original
// is not changed), and through it to the cause, so errors.Is and errors.As
// on the cause (a timeout, a refused connection) still answer; the wrapping
// layers between them, which only add words, are dropped.
func redactURL(err error) error {
	var found []*url.Error
	walkErrors(err, func(e error) {
		if ue, ok := e.(*url.Error); ok {
			found = append(found, ue)
		}
	})
	if len(found) == 0 {
		return err
	}
	msg, changed := err.Error(), false
	for _, ue := range found {
		clean := safeURL(ue.URL)
		if clean == ue.URL {
			continue
		}
		changed = true
		// url.Error quotes the URL with %q; replace that form first, then
		// any bare copy.
		msg = strings.ReplaceAll(msg, strconv.Quote(ue.URL), strconv.Quote(clean))
		msg = strings.ReplaceAll(msg, ue.URL, clean)
	}
	if !changed {
		return err
	}
	first := found[0]
	return &redactedError{msg: msg, cause: &url.Error{Op: first.Op, URL: safeURL(first.URL), Err: first.Err}}
}

// redactedError is an error whose text had its URLs redacted.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// walkErrors calls fn on err and on every error it wraps, depth first.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	}
}

// safeURL is raw without its query, fragment and userinfo. A URL that does
// not parse is cut at its first '?' or '#', and loses anything before an
// '@' in its authority.
func safeURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		// A URL without a host whose path starts with "//" prints as an
		// authority ("//@//@" prints as "//@"), which parses with userinfo
		// again: strip until the printed form parses without any. Each
		// round drops at least one "@", so the loop ends.
		for {
			u.User = nil
			u.RawQuery, u.ForceQuery = "", false
			u.Fragment, u.RawFragment = "", ""
			s := u.String()
			v, err := url.Parse(s)
			if err != nil || v.User == nil {
				return s
			}
			u = v
		}
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	scheme, rest, ok := strings.Cut(raw, "//")
	if !ok {
		scheme, rest = "", raw
	} else {
		scheme += "//"
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	if path != "" || strings.Contains(rest, "/") {
		return scheme + authority + "/" + path
	}
	return scheme + authority
}

// plainBase refuses a base URL with userinfo, a query or a fragment: a
// credential goes in a header (see Credential), and what a base URL carries
// would reach every request URL, the store and status.
func plainBase(u *url.URL) error {
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("band url %q: want http(s)://host[/path], without credentials, query or fragment", safeURL(u.String()))
	}
	return nil
}
