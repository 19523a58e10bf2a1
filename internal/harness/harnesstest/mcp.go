package harnesstest

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jamhq/jam/internal/harness"
)

// MCPServer is a small MCP server (streamable HTTP, the official SDK) for
// the tests that give a thread tools: one tool, echo(text), which answers
// "echo: TEXT". Every request must carry Authorization: Bearer Token; any
// other gets 401. It records the tool calls it served and counts the
// requests it refused.
type MCPServer struct {
	// Token is the bearer token it accepts.
	Token string
	// URL is its endpoint (http://ADDR/mcp), Addr its loopback TCP
	// address.
	URL, Addr string
	// Sock is a unix socket serving the same, for a bridge into a network
	// namespace (realagent's Reach).
	Sock string

	srv *http.Server
	wg  sync.WaitGroup

	mu      sync.Mutex
	calls   []MCPCall // guarded by mu
	refused int       // guarded by mu
}

// MCPCall is one tool call the server served.
type MCPCall struct {
	Tool string
	// Text is echo's argument.
	Text string
	// Authorization is the request's header.
	Authorization string
}

// MCPEchoTool is the server's tool.
const MCPEchoTool = "echo"

// NewMCPServer starts a server accepting token, stopped at the end of the
// test.
func NewMCPServer(t testing.TB, token string) *MCPServer {
	t.Helper()
	s := &MCPServer{Token: token}
	server := mcp.NewServer(&mcp.Implementation{Name: "jam-test", Version: "1.0.0"}, nil)
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: MCPEchoTool, Description: "Echoes its text back."},
		func(_ context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			auth := ""
			if req.Extra != nil {
				auth = req.Extra.Header.Get("Authorization")
			}
			s.mu.Lock()
			s.calls = append(s.calls, MCPCall{Tool: MCPEchoTool, Text: in.Text, Authorization: auth})
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	// Stateless: no session outlives its request, so nothing is left
	// running when the server stops.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	want := "Bearer " + token
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			s.mu.Lock()
			s.refused++
			s.mu.Unlock()
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Short: a unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "jam-mcp")
	if err != nil {
		t.Fatal(err)
	}
	s.Sock = filepath.Join(dir, "mcp.sock")
	uln, err := net.Listen("unix", s.Sock)
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	s.URL = "http://" + s.Addr + "/mcp"
	for _, l := range []net.Listener{ln, uln} {
		s.wg.Go(func() {
			if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("mcp server: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		_ = s.srv.Close()
		s.wg.Wait()
		_ = os.RemoveAll(dir)
	})
	return s
}

// Server is the server as a thread is given it, under name, with token as
// its bearer token (Token, or a wrong one).
func (s *MCPServer) Server(name, token string) harness.MCPServer {
	return harness.MCPServer{Name: name, URL: s.URL, Headers: map[string]string{"Authorization": "Bearer " + token}}
}

// Calls are the tool calls served so far.
func (s *MCPServer) Calls() []MCPCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]MCPCall(nil), s.calls...)
}

// Refused counts the requests refused for their token.
func (s *MCPServer) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// GroupCmdlines are the command lines of every process in the process
// group pgid (a harness process's Pid), each with its arguments joined by
// spaces: a test asserts a secret is in none of them.
func GroupCmdlines(t testing.TB, pgid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // not a process, or gone
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces, so read
		// after its closing parenthesis.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		out = append(out, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " "))
	}
	return out
}
