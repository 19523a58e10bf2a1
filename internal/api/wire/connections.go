package wire

import "time"

// Connection is one external authority of the daemon's workspace (GET
// /v1/connections/{connection}). It never carries the secret.
type Connection struct {
	ID string `json:"id"`
	// Provider is github, anthropic, openai, opencode_zen, modal or band
	// (made by jam account add and jam agent add, not by hand).
	Provider string `json:"provider"`
	Name     string `json:"name"`
	BaseURL  string `json:"base_url,omitempty"`
	// Version is the number of the active credential version (of the
	// last one, once removed).
	Version int       `json:"version"`
	Removed bool      `json:"removed,omitempty"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// Connections is the body of GET /v1/connections: the live connections,
// oldest first.
type Connections struct {
	Connections []Connection `json:"connections"`
}

// ConnectionAddRequest is the body of POST /v1/connections. Secret is the
// credential (a token, an API key); it is sealed in the store and never
// returned.
type ConnectionAddRequest struct {
	Provider string `json:"provider"`
	Name     string `json:"name"`
	BaseURL  string `json:"base_url,omitempty"`
	Secret   string `json:"secret"`
}

// ConnectionRotateRequest is the body of POST
// /v1/connections/{connection}/rotate: the credential's next version.
type ConnectionRotateRequest struct {
	Secret string `json:"secret"`
}
