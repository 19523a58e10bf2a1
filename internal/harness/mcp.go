package harness

// MCPServer is an MCP server a thread is given: jam's tools for agents
// (package mcp), reached over streamable HTTP on loopback.
//
// Headers carry the thread's capability (Authorization: Bearer …): they
// are secrets. An adapter passes them to the CLI only through its
// protocol (ACP session/new and session/load) or a 0600 file (Claude
// Code's --mcp-config), never in argv, and hides them in its errors.
type MCPServer struct {
	// Name is the server's name; agents prefix its tools with it (Claude
	// Code calls a tool mcp__NAME__TOOL, OpenCode NAME_TOOL).
	Name string
	// URL is the streamable HTTP endpoint.
	URL string
	// Headers go with every request to URL.
	Headers map[string]string
}

// Secrets are the server's header values, for LaunchSpec.Secrets.
func (s MCPServer) Secrets() []string {
	out := make([]string, 0, len(s.Headers))
	for _, v := range s.Headers {
		out = append(out, v)
	}
	return out
}
