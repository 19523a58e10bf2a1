package forge

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Repo names a GitHub repository.
type Repo struct{ Owner, Name string }

// String returns "OWNER/NAME".
func (r Repo) String() string { return r.Owner + "/" + r.Name }

var (
	ownerRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	hostRE  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?$`)
)

// validRepo reports whether r could name a GitHub repository.
func validRepo(r Repo) error {
	if !ownerRE.MatchString(r.Owner) {
		return invalidf("the owner %q is not a GitHub account name", r.Owner)
	}
	// GitHub drops a ".git" ending from a new repository's name, so no
	// repository has one.
	if !nameRE.MatchString(r.Name) || r.Name == "." || r.Name == ".." || strings.HasSuffix(r.Name, ".git") {
		return invalidf("the repository name %q is not a GitHub repository name", r.Name)
	}
	return nil
}

// ParseRemote reads an https GitHub remote URL ("https://HOST/OWNER/NAME"
// with an optional ".git" and trailing "/") into its repository and the
// API base URL: https://api.github.com/ for github.com, and
// https://HOST/api/v3/ for any other host (GitHub Enterprise Server).
//
// A URL with userinfo is refused with jam.ErrInvalid (a credential does not
// belong in a remote URL), and no error quotes the URL, so a secret in it
// never reaches a message.
func ParseRemote(remote string) (Repo, string, error) {
	u, err := url.Parse(remote)
	if err != nil {
		return Repo{}, "", invalidf("the remote is not a URL")
	}
	if u.User != nil {
		return Repo{}, "", invalidf("the remote URL carries userinfo (a credential); give the token as a connection instead")
	}
	if u.Scheme != "https" {
		return Repo{}, "", invalidf("the remote URL's scheme is %q; want https", safeScheme(u.Scheme))
	}
	if u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || strings.Contains(remote, "#") {
		return Repo{}, "", invalidf("the remote URL must be https://HOST/OWNER/NAME, without a query or fragment")
	}
	host := strings.ToLower(u.Host)
	if !hostRE.MatchString(host) {
		return Repo{}, "", invalidf("the remote URL has no valid host")
	}
	path := strings.TrimPrefix(u.Path, "/")
	path = strings.TrimSuffix(path, "/")
	parts := strings.Split(path, "/")
	if len(parts) != 2 {
		return Repo{}, "", invalidf("the remote URL's path must be /OWNER/NAME")
	}
	r := Repo{Owner: parts[0], Name: strings.TrimSuffix(parts[1], ".git")}
	if err := validRepo(r); err != nil {
		return Repo{}, "", err
	}
	switch host {
	case "github.com", "www.github.com":
		return r, DefaultBaseURL, nil
	}
	return r, "https://" + host + "/api/v3/", nil
}

// safeScheme keeps a scheme printable; url.Parse only accepts
// [A-Za-z0-9+.-] there, so it is already safe, but bound its length.
func safeScheme(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}
