package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jamhq/jam/internal/version"
)

// The HTTP refusals' codes, in the body {"error":{"code","message"}}.
const (
	httpUnauthenticated  = "unauthenticated"
	httpPermissionDenied = "permission_denied"
	httpNotFound         = "not_found"
	httpMethodNotAllowed = "method_not_allowed"
	httpPayloadTooLarge  = "payload_too_large"
)

// grantKey is the request context key of the caller's grant.
type grantKey struct{}

// extraGrant is the key of the grant in auth.TokenInfo.Extra, how a tool
// handler learns whose call it runs.
const extraGrant = "jam.grant"

// newHandler is the request path: guard (Host, Origin, path, method, body
// size), then the bearer token, then the SDK. Nothing reaches the SDK
// without a valid token.
func (s *Server) newHandler() http.Handler {
	sdkSrv := s.sdkServer()
	stream := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return sdkSrv }, &sdk.StreamableHTTPOptions{
		Stateless:                    true,
		JSONResponse:                 true,
		Logger:                       sdkLogger(s.log),
		MaxRequestBodyBytes:          s.cfg.MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	// The SDK's bearer middleware is the only way to hand the tool
	// handlers a TokenInfo; by the time it runs, authenticate has found
	// the grant, which the verifier reads from the context.
	bearer := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		g, ok := ctx.Value(grantKey{}).(*grant)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: string(g.session), Extra: map[string]any{extraGrant: g}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return s.guard(s.authenticate(bearer(stream)))
}

// guard refuses what no valid call looks like, before the token is
// read: a Host that is not loopback (DNS rebinding: a page on a name
// that resolves to 127.0.0.1), any Origin (agents' HTTP clients send
// none; a browser always does on a POST), another path or method, and a
// declared body over the bound. Bodies sent without a length are cut at
// the bound as they are read.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !loopbackHost(r.Host):
			writeError(w, http.StatusForbidden, httpPermissionDenied, "the Host header must name a loopback address")
			return
		case len(r.Header.Values("Origin")) > 0:
			writeError(w, http.StatusForbidden, httpPermissionDenied, "requests from web pages are refused")
			return
		case r.URL.Path != Path:
			writeError(w, http.StatusNotFound, httpNotFound, "jam's MCP endpoint is "+Path)
			return
		}
		switch r.Method {
		case http.MethodPost, http.MethodGet, http.MethodDelete:
		default:
			w.Header().Set("Allow", "POST, GET, DELETE")
			writeError(w, http.StatusMethodNotAllowed, httpMethodNotAllowed, "use POST")
			return
		}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, httpPayloadTooLarge, "the body is over "+strconv.FormatInt(s.cfg.MaxBodyBytes, 10)+" bytes")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// authenticate finds the grant of the request's bearer token, or answers
// 401. Neither the token nor anything derived from it is logged or
// echoed.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			unauthenticated(w, "no bearer token: send the Authorization header jam gave with this server")
			return
		}
		g, ok := s.lookup(strings.TrimSpace(token))
		if !ok {
			unauthenticated(w, "the bearer token is not valid: it was revoked, or jam restarted since it was given")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), grantKey{}, g)))
	})
}

func unauthenticated(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="jam"`)
	writeError(w, http.StatusUnauthorized, httpUnauthenticated, msg)
}

// errorBody is the body of every refusal the server makes itself.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// loopbackHost reports whether a Host header names this machine:
// localhost or a loopback IP, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sdkLogger passes on the SDK's warnings and errors only: it logs every
// stateless request's session at info.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: l.Handler(), min: slog.LevelWarn}).With("part", "sdk")
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

func serverVersion() string { return version.String() }
