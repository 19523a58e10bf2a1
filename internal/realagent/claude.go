package realagent

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jamhq/jam/internal/fakemodel"
)

// ClaudeVersion is the @anthropic-ai/claude-code npm package the tests
// are pinned to.
const ClaudeVersion = "2.1.332"

// Environment variables the Claude Code tests read.
const (
	// EnvClaude is the path of the claude native binary
	// (node_modules/@anthropic-ai/claude-code-linux-x64/claude of an npm
	// install of @anthropic-ai/claude-code@ClaudeVersion).
	EnvClaude = "JAM_CLAUDE"
	// EnvRequireClaude, set to 1, turns a missing binary into a failure
	// instead of a skip.
	EnvRequireClaude = "JAM_REQUIRE_CLAUDE"
)

// Claude is one test's setup for running Claude Code against a fake
// model.
type Claude struct {
	// Binary is the claude executable.
	Binary string
	// Home is the CLI's home and configuration directory: runs that share
	// a Claude share their sessions.
	Home string
	// Env is the CLI's whole environment.
	Env []string
	// Isolated says the CLI runs in its own network namespace.
	Isolated bool

	sock, addr string
	links      []Link // further addresses the bridge serves (Reach)
}

// Reach makes addr, a loopback TCP address of the test process (an MCP
// server's), reachable from the isolated CLI too: the bridge serves it in
// the namespace, forwarded to sock, a unix socket the same server serves.
// Call it before Command.
func (c *Claude) Reach(sock, addr string) { c.links = append(c.links, Link{sock, addr}) }

// NewClaude finds the binary (or skips t) and prepares a home and an
// environment pointing Claude Code at model, which must be started: the
// model's root as ANTHROPIC_BASE_URL, a dummy API key, no nonessential
// traffic, no retries, no auto-update, and IS_SANDBOX=1 (the CLI refuses
// some modes as root without it). It adds a unix listener to model when
// the CLI can be isolated.
func NewClaude(t testing.TB, model *fakemodel.Server) *Claude {
	t.Helper()
	bin := os.Getenv(EnvClaude)
	if bin == "" {
		if os.Getenv(EnvRequireClaude) == "1" {
			t.Fatalf("%s=1 but %s is not set: install @anthropic-ai/claude-code@%s with npm and point %s at node_modules/@anthropic-ai/claude-code-linux-x64/claude",
				EnvRequireClaude, EnvClaude, ClaudeVersion, EnvClaude)
		}
		t.Skipf("%s is not set: these tests need @anthropic-ai/claude-code@%s (see README)", EnvClaude, ClaudeVersion)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", EnvClaude, bin, err)
	}
	home, err := os.MkdirTemp("", "jam-cl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	c := &Claude{Binary: bin, Home: home, addr: model.Addr()}
	c.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + model.Root(),
		"ANTHROPIC_API_KEY=sk-ant-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"IS_SANDBOX=1",
	}
	c.sock = filepath.Join(home, "model.sock")
	ln, err := net.Listen("unix", c.sock)
	if err != nil {
		t.Fatal(err)
	}
	model.Serve(ln) // closed by the model's Stop
	c.Isolated = isolationWorks()
	return c
}

// Command is the argv that runs claude, isolated when possible, without
// the protocol's flags (the harness adds them); run it with Env.
func (c *Claude) Command() []string {
	if !c.Isolated {
		return []string{c.Binary}
	}
	return append([]string{"unshare", "-n"}, BridgeLinksCommand(append([]Link{{c.sock, c.addr}}, c.links...), c.Binary)...)
}

// SandboxCommand is the argv that runs claude in a sandbox that cuts the
// network (jam's sandbox=bwrap with network=off), without the protocol's
// flags: the sandbox makes the network namespace, and the bridge, inside
// it, reaches the fake model. The sandbox must let it read the bridge's
// executable, the model's socket and the claude binary (they are
// absolute arguments, so jam's sandbox does).
func (c *Claude) SandboxCommand() []string { return BridgeCommand(c.sock, c.addr, c.Binary) }

// SandboxEnv is Env without HOME, the XDG directories and
// CLAUDE_CONFIG_DIR: in a sandbox the CLI's home is its own (and the only
// place it may write besides its worktree), and its configuration and
// sessions go to ~/.claude there.
func (c *Claude) SandboxEnv() []string {
	var env []string
	for _, kv := range c.Env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "CLAUDE_CONFIG_DIR" || strings.HasPrefix(name, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
