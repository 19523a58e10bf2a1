package wire

// UILogin is the answer to POST /v1/ui/login: a one-time sign-in link to
// the web UI.
type UILogin struct {
	URL string `json:"url"`
}
