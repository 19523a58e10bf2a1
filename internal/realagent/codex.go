package realagent

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/jamhq/jam/internal/fakemodel"
)

// CodexVersion is the @openai/codex npm package the tests are pinned to.
const CodexVersion = "0.171.0"

// Environment variables the Codex tests read.
const (
	// EnvCodex is the path of the codex native binary
	// (node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
	// of an npm install of @openai/codex@CodexVersion).
	EnvCodex = "JAM_CODEX"
	// EnvRequireCodex, set to 1, turns a missing binary into a failure
	// instead of a skip.
	EnvRequireCodex = "JAM_REQUIRE_CODEX"
)

// CodexKeyEnv is the variable the fake provider's key is read from
// (model_providers.fake.env_key); CodexKey its value, sent to the fake
// model as "Authorization: Bearer <key>".
const (
	CodexKeyEnv = "FAKE_API_KEY"
	CodexKey    = "fake-codex-key"
)

// Codex is one test's setup for running `codex app-server` against a fake
// model.
type Codex struct {
	// Binary is the codex executable.
	Binary string
	// Home is the agent's home; CODEX_HOME (Home/.codex, holding
	// config.toml, its threads and state) and the XDG directories are
	// under it. Runs that share a Codex share their threads.
	Home, CodexHome string
	// Env is the agent's environment: complete on its own.
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
func (c *Codex) Reach(sock, addr string) { c.links = append(c.links, Link{sock, addr}) }

// NewCodex finds the binary (or skips t) and prepares a home whose
// config.toml points Codex at model, which must be started: a custom
// provider on the Responses wire, no retries, no plugins (whose
// marketplace sync reaches the network), analytics and feedback off. It
// adds a unix listener to model when the agent can be isolated.
func NewCodex(t testing.TB, model *fakemodel.Server) *Codex {
	t.Helper()
	bin := os.Getenv(EnvCodex)
	if bin == "" {
		if os.Getenv(EnvRequireCodex) == "1" {
			t.Fatalf("%s=1 but %s is not set: install @openai/codex@%s with npm and point %s at "+
				"node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", EnvRequireCodex, EnvCodex, CodexVersion, EnvCodex)
		}
		t.Skipf("%s is not set: these tests need @openai/codex@%s (see README)", EnvCodex, CodexVersion)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", EnvCodex, bin, err)
	}
	// Short: the unix socket's path is limited to about 100 bytes.
	home, err := os.MkdirTemp("", "jam-cx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	c := &Codex{Binary: bin, Home: home, CodexHome: filepath.Join(home, ".codex"), addr: model.Addr()}
	for _, d := range []string{c.CodexHome, filepath.Join(home, ".config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.CodexHome, "config.toml"), []byte(CodexConfig(model.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"CODEX_HOME=" + c.CodexHome,
		CodexKeyEnv + "=" + CodexKey,
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

// CodexConfig is a config.toml pointing Codex at a fake model's base URL.
func CodexConfig(baseURL string) string {
	return fmt.Sprintf(`model = %q
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake local model"
base_url = %q
env_key = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
`, fakemodel.DefaultModel, baseURL, CodexKeyEnv)
}

// Command is the argv that runs codex (the harness appends app-server),
// isolated when possible; run it with Env.
func (c *Codex) Command() []string {
	if !c.Isolated {
		return []string{c.Binary}
	}
	return append([]string{"unshare", "-n"}, BridgeLinksCommand(append([]Link{{c.sock, c.addr}}, c.links...), c.Binary)...)
}

// SandboxCommand is the argv that runs codex in a sandbox that cuts the
// network (jam's bwrap executor with NoNetwork; the harness appends
// app-server): the bridge, inside it, reaches the fake model. The
// configuration is given as -c options, the person's own options on the
// command, so that Codex needs no config.toml: its CODEX_HOME is then
// the default, .codex in the home jam gives the agent. Run it with
// SandboxEnv. The sandbox must let the process read the bridge's
// executable, the model's socket and the codex binary (they are absolute
// arguments, so jam's sandbox does).
func (c *Codex) SandboxCommand() []string {
	return BridgeCommand(c.sock, c.addr, append([]string{c.Binary}, CodexOptions("http://"+c.addr+"/v1")...)...)
}

// SandboxEnv is the environment an agent template adds for
// SandboxCommand: the provider's key.
func (c *Codex) SandboxEnv() []string { return []string{CodexKeyEnv + "=" + CodexKey} }

// CodexOptions are the -c options that configure Codex as CodexConfig
// does.
func CodexOptions(baseURL string) []string {
	return []string{
		"-c", "model=" + fakemodel.DefaultModel,
		"-c", "model_provider=fake",
		"-c", "check_for_update_on_startup=false",
		"-c", fmt.Sprintf(`model_providers.fake={name="Fake local model",base_url=%q,env_key=%q,wire_api="responses",request_max_retries=0,stream_max_retries=0}`,
			baseURL, CodexKeyEnv),
		"-c", "analytics.enabled=false",
		"-c", "feedback.enabled=false",
		"-c", "features.plugins=false",
	}
}
