package realagent

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jamhq/jam/internal/fakemodel"
)

// CopilotVersion is the @github/copilot npm package the tests are pinned
// to.
const CopilotVersion = "1.0.102"

// Environment variables the Copilot tests read.
const (
	// EnvCopilot is the path of the copilot native binary
	// (node_modules/@github/copilot-linux-x64/copilot of an npm install of
	// @github/copilot@CopilotVersion).
	EnvCopilot = "JAM_COPILOT"
	// EnvRequireCopilot, set to 1, turns a missing binary into a failure
	// instead of a skip.
	EnvRequireCopilot = "JAM_REQUIRE_COPILOT"
)

// Copilot is one test's setup for running the GitHub Copilot CLI against a
// fake model, with the person's own model key (Copilot's offline BYOK
// mode): no GitHub login, no GitHub token, nothing fetched.
type Copilot struct {
	// Binary is the copilot executable.
	Binary string
	// Home is the CLI's home; COPILOT_HOME is under it. Runs that share a
	// Copilot share their sessions.
	Home string
	// Env is the CLI's environment, complete on its own (no GitHub token
	// variable: the model key is the provider's).
	Env []string
	// Cache is the CLI's cache directory (XDG_CACHE_HOME), shared by
	// every run of the binary: Copilot unpacks its own package there at
	// its first start (about 235 MB, seconds), once for all tests.
	Cache string
	// Isolated says the CLI runs in its own network namespace.
	Isolated bool

	sock string // the fake model's unix socket, when isolated
	addr string // the fake model's TCP address
}

// NewCopilot finds the binary (or skips t) and prepares a home and an
// environment pointing Copilot at model, which must be started, as an
// OpenAI-compatible provider (Chat Completions) serving the fake model's
// default model. It adds a unix listener to model when the
// CLI can be isolated.
func NewCopilot(t testing.TB, model *fakemodel.Server) *Copilot {
	t.Helper()
	bin := os.Getenv(EnvCopilot)
	if bin == "" {
		if os.Getenv(EnvRequireCopilot) == "1" {
			t.Fatalf("%s=1 but %s is not set: install @github/copilot@%s with npm and point %s at node_modules/@github/copilot-linux-x64/copilot",
				EnvRequireCopilot, EnvCopilot, CopilotVersion, EnvCopilot)
		}
		t.Skipf("%s is not set: these tests need @github/copilot@%s (see README)", EnvCopilot, CopilotVersion)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", EnvCopilot, bin, err)
	}
	// Short: the unix socket's path is limited to about 100 bytes.
	home, err := os.MkdirTemp("", "jam-cp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	cache, err := copilotCache(bin)
	if err != nil {
		t.Fatalf("copilot's package cache: %v", err)
	}
	c := &Copilot{Binary: bin, Home: home, Cache: cache, addr: model.Addr()}
	c.Env = copilotEnv(home, cache, model.URL(), fakemodel.DefaultModel)
	c.sock = filepath.Join(home, "model.sock")
	ln, err := net.Listen("unix", c.sock)
	if err != nil {
		t.Fatal(err)
	}
	model.Serve(ln) // closed by the model's Stop
	c.Isolated = isolationWorks()
	return c
}

// Command is the argv that runs copilot, isolated when possible, without
// its protocol arguments: the harness kind adds them (copilot --acp
// --no-auto-update), and, behind the bridge, they reach copilot. Run it
// with Env.
func (c *Copilot) Command() []string {
	if !c.Isolated {
		return []string{c.Binary}
	}
	return append([]string{"unshare", "-n"}, BridgeCommand(c.sock, c.addr, c.Binary)...)
}

// SandboxCommand is the argv that runs copilot in a sandbox that cuts the
// network (jam's sandbox=bwrap network=off), without its protocol
// arguments, which the harness kind adds: the bridge, inside the
// sandbox's namespace, reaches the fake model. The sandbox must show the
// bridge's executable, the model's socket and the binary (absolute
// arguments, so jam's does) and, read-only, Cache.
func (c *Copilot) SandboxCommand() []string {
	return BridgeCommand(c.sock, c.addr, c.Binary)
}

// SandboxEnv is Env without HOME, COPILOT_HOME and the XDG directories
// but the cache: in a sandbox the CLI's home is its own.
func (c *Copilot) SandboxEnv() []string {
	var env []string
	for _, kv := range c.Env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "COPILOT_HOME" || (strings.HasPrefix(name, "XDG_") && name != "XDG_CACHE_HOME") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// copilotCache is the cache directory every run of bin shares, in the
// system's temporary directory, filled by one `copilot --version` (which
// unpacks the CLI's package) under a lock, so that test binaries running
// at once unpack it once.
func copilotCache(bin string) (string, error) {
	cacheOnce.Do(func() { cacheDir, cacheErr = fillCopilotCache(bin) })
	return cacheDir, cacheErr
}

var (
	cacheOnce sync.Once
	cacheDir  string
	cacheErr  error
)

func fillCopilotCache(bin string) (string, error) {
	dir := filepath.Join(os.TempDir(), "jam-copilot-cache-"+CopilotVersion)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing unlocks too
	ready := filepath.Join(dir, "jam-ready")
	if _, err := os.Stat(ready); err == nil {
		return dir, nil
	}
	home, err := os.MkdirTemp("", "jam-cp-unpack")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(bin, "--version")
	cmd.Env = copilotEnv(home, dir, "http://127.0.0.1:9/v1", fakemodel.DefaultModel)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", bin, err, out)
	}
	return dir, os.WriteFile(ready, nil, 0o600)
}

// copilotEnv is the environment of one copilot run: offline, with the
// provider's key, its own home, the shared cache, no auto-update.
func copilotEnv(home, cache, baseURL, modelID string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"COPILOT_HOME=" + filepath.Join(home, ".copilot"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + cache,
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_BASE_URL=" + baseURL,
		"COPILOT_PROVIDER_TYPE=openai",
		"COPILOT_PROVIDER_WIRE_API=completions",
		"COPILOT_PROVIDER_API_KEY=dummy",
		"COPILOT_MODEL=" + modelID,
	}
}
