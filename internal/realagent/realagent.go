// Package realagent prepares official agent CLIs for tests that drive
// them for real against the fake model (internal/fakemodel): it finds the
// pinned binary (skipping the test when it is absent, unless the
// environment requires it), gives every run its own home and XDG
// directories with a configuration that points the agent at the fake
// model and turns off everything that would reach the network, and, when
// running as root, confines the agent to a network namespace of its own
// in which only loopback exists (Command), or leaves that to a sandbox
// that cuts the network (SandboxCommand, SandboxEnv: jam's sandbox=bwrap
// with network=off).
//
// In that namespace the fake model, which runs in the test process
// outside it, is reached through a bridge: the test binary itself, started
// by unshare, brings loopback up, listens on the fake model's TCP address
// inside the namespace, forwards each connection to a unix socket the fake
// model also serves (the file system is shared across namespaces), and
// runs the agent as its child. A test package enables this by calling
// RunBridgeIfAsked first thing in TestMain (or in an init function).
package realagent

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jamhq/jam/internal/fakemodel"
)

// OpenCodeVersion is the opencode-ai npm package the tests are pinned to.
const OpenCodeVersion = "1.18.33"

// Environment variables the tests read.
const (
	// EnvOpenCode is the path of the opencode native binary
	// (node_modules/opencode-linux-x64/bin/opencode of an npm install of
	// opencode-ai@OpenCodeVersion).
	EnvOpenCode = "JAM_OPENCODE"
	// EnvRequireOpenCode, set to 1, turns a missing binary into a
	// failure instead of a skip.
	EnvRequireOpenCode = "JAM_REQUIRE_OPENCODE"
)

// FakeModelID is the provider/model the configuration selects.
const FakeModelID = "fake/" + fakemodel.DefaultModel

// AltModel is a second model of the fake provider, which the
// configuration offers but does not select: a client that puts a session
// on FakeAltModelID shows in the model requests' model.
const (
	AltModel       = "fake-model-alt"
	FakeAltModelID = "fake/" + AltModel
)

// OpenCode is one test's setup for running `opencode acp` against a fake
// model.
type OpenCode struct {
	// Binary is the opencode executable.
	Binary string
	// Home is the agent's home; its XDG directories are under it. Runs
	// that share an OpenCode share their sessions.
	Home string
	// Env is the agent's environment: complete on its own, and also fit
	// to go on top of another (an owned agent's template adds it to
	// jamd's), as it sets every variable that points opencode somewhere.
	Env []string
	// Isolated says the agent runs in its own network namespace.
	Isolated bool

	sock  string // the fake model's unix socket, when isolated
	addr  string // the fake model's TCP address
	links []Link // further addresses the bridge serves (Reach)
}

// Reach makes addr, a loopback TCP address of the test process (an MCP
// server's), reachable from the isolated agent too: the bridge serves it
// in the namespace, forwarded to sock, a unix socket the same server
// serves. Call it before Command.
func (o *OpenCode) Reach(sock, addr string) { o.links = append(o.links, Link{sock, addr}) }

// NewOpenCode finds the binary (or skips t) and prepares a home and a
// configuration pointing at model, which must be started. It adds a unix
// listener to model when the agent can be isolated.
func NewOpenCode(t testing.TB, model *fakemodel.Server) *OpenCode {
	t.Helper()
	bin := os.Getenv(EnvOpenCode)
	if bin == "" {
		if os.Getenv(EnvRequireOpenCode) == "1" {
			t.Fatalf("%s=1 but %s is not set: install opencode-ai@%s with npm and point %s at node_modules/opencode-linux-x64/bin/opencode",
				EnvRequireOpenCode, EnvOpenCode, OpenCodeVersion, EnvOpenCode)
		}
		t.Skipf("%s is not set: these tests need opencode-ai@%s (see README)", EnvOpenCode, OpenCodeVersion)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", EnvOpenCode, bin, err)
	}
	// Short: the unix socket's path is limited to about 100 bytes.
	home, err := os.MkdirTemp("", "jam-oc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	o := &OpenCode{Binary: bin, Home: home, addr: model.Addr()}
	o.Env = openCodeEnv(home, model.URL())
	// The model's unix socket, for a bridge in a network namespace (made
	// here with unshare, or by a sandbox that cuts the network).
	o.sock = filepath.Join(home, "model.sock")
	ln, err := net.Listen("unix", o.sock)
	if err != nil {
		t.Fatal(err)
	}
	model.Serve(ln) // closed by the model's Stop
	o.Isolated = isolationWorks()
	return o
}

// SandboxCommand is the argv that runs `opencode acp --pure` in a sandbox
// that cuts the network (jam's sandbox=bwrap network=off): the sandbox
// makes the network namespace, and the bridge, inside it, reaches the fake
// model. The sandbox must let it read the bridge's executable, the
// model's socket and the opencode binary (they are absolute arguments, so
// jam's sandbox does).
func (o *OpenCode) SandboxCommand() []string {
	return BridgeCommand(o.sock, o.addr, o.Binary, "acp", "--pure")
}

// SandboxKindCommand is SandboxCommand for the opencode harness kind,
// which adds `acp` itself: `opencode --pure` behind the bridge.
func (o *OpenCode) SandboxKindCommand() []string {
	return BridgeCommand(o.sock, o.addr, o.Binary, "--pure")
}

// SandboxEnv is Env without HOME and the XDG directories: in a sandbox
// the agent's home is its own (and the only place it may write), and
// opencode's XDG directories default to it.
func (o *OpenCode) SandboxEnv() []string {
	var env []string
	for _, kv := range o.Env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || strings.HasPrefix(name, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Command is the argv that runs `opencode acp --pure`, isolated when
// possible; run it with Env.
func (o *OpenCode) Command() []string {
	argv := []string{o.Binary, "acp", "--pure"}
	if !o.Isolated {
		return argv
	}
	return append([]string{"unshare", "-n"}, BridgeLinksCommand(append([]Link{{o.sock, o.addr}}, o.links...), argv...)...)
}

// KindCommand is Command for the opencode harness kind, which adds `acp`
// itself: `opencode --pure`, isolated when possible.
func (o *OpenCode) KindCommand() []string {
	argv := []string{o.Binary, "--pure"}
	if !o.Isolated {
		return argv
	}
	return append([]string{"unshare", "-n"}, BridgeLinksCommand(append([]Link{{o.sock, o.addr}}, o.links...), argv...)...)
}

// openCodeEnv is the environment of one opencode run.
func openCodeEnv(home, baseURL string) []string {
	config := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"model":      FakeModelID,
		// Ask before running commands, so that the client's policy decides.
		"permission": map[string]any{"bash": "ask"},
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Fake",
			"options": map[string]any{"baseURL": baseURL, "apiKey": "dummy"},
			"models": map[string]any{
				fakemodel.DefaultModel: map[string]any{"name": "Fake Model", "tool_call": true},
				AltModel:               map[string]any{"name": "Fake Model Alt", "tool_call": true},
			},
		}},
	}
	b, _ := json.Marshal(config)
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		"OPENCODE_CONFIG_CONTENT=" + string(b),
		// OpenCode installs its plugin package into the config directory
		// with npm in the background; point npm at a closed loopback port
		// so that it fails at once instead of reaching the registry
		// (a warning in OpenCode's log, nothing more).
		"npm_config_registry=http://127.0.0.1:9/",
		"npm_config_offline=true",
	}
}

// isolationWorks says whether agents can get a network namespace: only
// as root, and only where unshare itself succeeds (some containers forbid
// it; then agents run unconfined, relying on their configuration).
var isolationWorks = sync.OnceValue(func() bool {
	if os.Geteuid() != 0 {
		return false
	}
	return exec.Command("unshare", "-n", "true").Run() == nil
})
