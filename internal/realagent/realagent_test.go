package realagent

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/fakemodel"
)

// probeEnv makes the test binary a probe: it fetches the fake model's
// model list and tries to leave loopback, and prints what happened.
const probeEnv = "JAM_TEST_NETNS_PROBE"

func TestMain(m *testing.M) {
	RunBridgeIfAsked()
	if url := os.Getenv(probeEnv); url != "" {
		os.Exit(probe(url))
	}
	goleak.VerifyTestMain(m)
}

func probe(url string) int {
	res, err := http.Get(url)
	if err != nil {
		fmt.Println("fetch:", err)
		return 1
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Printf("fetched: %s", b)
	// A documentation address: outside the namespace it is merely
	// unroutable; inside, there is no route at all.
	c, err := net.DialTimeout("tcp", "192.0.2.1:80", 5*time.Second)
	if err == nil {
		c.Close()
		fmt.Println("outside: reachable")
		return 0
	}
	fmt.Println("outside:", err)
	return 0
}

// TestBridge: an isolated command reaches the fake model through the
// bridge, and nothing beyond loopback.
func TestBridge(t *testing.T) {
	t.Parallel()
	if !isolationWorks() {
		t.Skip("no network namespaces here (not root, or unshare refused)")
	}
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	dir, err := os.MkdirTemp("", "jam-br")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "m.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	model.Serve(ln)

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command("unshare", "-n", exe, bridgeArg, sock, model.Addr(), exe)
	cmd.Env = append(os.Environ(), probeEnv+"="+model.URL()+"/models")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), `fetched: {"data":[{"created":0,"id":"fake-model"`, "the model is reached through the bridge")
	require.Contains(t, string(out), "outside: dial tcp 192.0.2.1:80: connect: network is unreachable")
}

func TestBridge_exitCodeAndBadArguments(t *testing.T) {
	t.Parallel()
	if !isolationWorks() {
		t.Skip("no network namespaces here (not root, or unshare refused)")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	err = exec.Command("unshare", "-n", exe, bridgeArg, filepath.Join(dir, "none.sock"), "127.0.0.1:1", "sh", "-c", "exit 7").Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 7, ee.ExitCode(), "the agent's exit code passes through")
	out, err := exec.Command("unshare", "-n", exe, bridgeArg, filepath.Join(dir, "none.sock"), "not an address", "true").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "jam-netns-bridge:")
}

func TestOpenCodeEnv(t *testing.T) {
	t.Parallel()
	env := openCodeEnv("/h", "http://127.0.0.1:9/v1")
	vars := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		vars[k] = v
	}
	require.Equal(t, "/h", vars["HOME"])
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"} {
		require.True(t, strings.HasPrefix(vars[k], "/h/"), k)
	}
	require.Equal(t, "1", vars["OPENCODE_DISABLE_AUTOUPDATE"])
	require.Equal(t, "http://127.0.0.1:9/", vars["npm_config_registry"], "its background npm install cannot reach the registry")
	for k := range vars {
		// Nothing of the test's own environment (keys, tokens) but PATH.
		require.True(t, k == "PATH" || k == "HOME" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "OPENCODE_") || strings.HasPrefix(k, "npm_config_"), "unexpected %s", k)
	}
	var config struct {
		Model      string
		Permission map[string]string
		Provider   map[string]struct {
			Options struct{ BaseURL string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(vars["OPENCODE_CONFIG_CONTENT"]), &config))
	require.Equal(t, FakeModelID, config.Model)
	require.Equal(t, "ask", config.Permission["bash"], "commands ask, so the client's policy decides")
	require.Equal(t, "http://127.0.0.1:9/v1", config.Provider["fake"].Options.BaseURL)
}

// TestCodexConfig: the config.toml and the -c options say the same: the
// fake provider on the Responses wire with the key variable, no retries,
// no plugins, analytics and feedback off.
func TestCodexConfig(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:9/v1"
	config := CodexConfig(url)
	opts := CodexOptions(url)
	require.Equal(t, 0, len(opts)%2)
	var keys []string
	for i := 0; i < len(opts); i += 2 {
		require.Equal(t, "-c", opts[i])
		k, v, ok := strings.Cut(opts[i+1], "=")
		require.True(t, ok, opts[i+1])
		keys = append(keys, k)
		switch k {
		case "model_providers.fake":
			for _, want := range []string{`base_url="` + url + `"`, `env_key="` + CodexKeyEnv + `"`, `wire_api="responses"`, "request_max_retries=0", "stream_max_retries=0"} {
				require.Contains(t, v, want)
			}
		case "features.plugins", "analytics.enabled", "feedback.enabled", "check_for_update_on_startup":
			require.Equal(t, "false", v, k)
		}
	}
	require.ElementsMatch(t, []string{"model", "model_provider", "check_for_update_on_startup", "model_providers.fake", "analytics.enabled",
		"feedback.enabled", "features.plugins"}, keys)
	for _, want := range []string{`model_provider = "fake"`, `base_url = "` + url + `"`, `env_key = "` + CodexKeyEnv + `"`, `wire_api = "responses"`,
		"request_max_retries = 0", "stream_max_retries = 0", "[features]\nplugins = false", "[analytics]\nenabled = false", "[feedback]\nenabled = false"} {
		require.Contains(t, config, want)
	}
}
