package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type testBundle struct {
	dir   string
	env   map[string]string
	flags *pflag.FlagSet
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dir := t.TempDir()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	return &testBundle{dir: dir, env: map[string]string{"HOME": dir}, flags: fs}
}

func (b *testBundle) load(t *testing.T, args ...string) (config.Config, error) {
	t.Helper()
	require.NoError(t, b.flags.Parse(args))
	return config.Load(config.LoadParams{Flags: b.flags, Env: func(k string) (string, bool) {
		v, ok := b.env[k]
		return v, ok
	}})
}

func (b *testBundle) writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(b.dir, "config.toml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestLoad_defaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg, err := b.load(t)
	require.NoError(t, err)
	require.Equal(t, config.Config{
		DataDir:         filepath.Join(b.dir, ".local", "share", "jam"),
		LogLevel:        "info",
		LogFormat:       "text",
		ShutdownTimeout: 4 * time.Second,
		Store:           "sqlite",
		Band:            "embedded",
		HubAddr:         "127.0.0.1:0",
		HTTPAddr:        "127.0.0.1:7420",
	}, cfg)

	b.env["JAM_HTTP_ADDR"] = "off"
	cfg, err = b.load(t)
	require.NoError(t, err)
	require.Empty(t, cfg.HTTPAddr, "off turns the web ui and the http api off")
}

func TestLoad_precedence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["XDG_DATA_HOME"] = "/xdg/data"
	b.env["JAM_LOG_LEVEL"] = "debug"
	b.env["JAM_HTTP_ADDR"] = "127.0.0.1:7000"
	b.env["JAM_CONFIG"] = b.writeFile(t, "log_level = \"warn\"\nlog_format = \"json\"\nhttp_addr = \"localhost:6000\"\nshutdown_timeout = \"2s\"\n")
	cfg, err := b.load(t, "--http-addr", "[::1]:0")
	require.NoError(t, err)
	require.Equal(t, "/xdg/data/jam", cfg.DataDir, "XDG_DATA_HOME applies when nothing names a data dir")
	require.Equal(t, "debug", cfg.LogLevel, "env beats file")
	require.Equal(t, "json", cfg.LogFormat, "file beats default")
	require.Equal(t, "[::1]:0", cfg.HTTPAddr, "flag beats env")
	require.True(t, cfg.HTTPAddrSet, "an address given is not the default")
	require.Equal(t, 2*time.Second, cfg.ShutdownTimeout)
	require.Equal(t, b.env["JAM_CONFIG"], cfg.ConfigFile)
}

func TestLoad_bandURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["JAM_BAND_KEY"] = "band_u_abc"
	cfg, err := b.load(t, "--band", "https://app.band.ai/")
	require.NoError(t, err)
	require.Equal(t, "https://app.band.ai", cfg.Band)
	require.Equal(t, "band_u_abc", cfg.BandKey)
}

// The store is chosen by the file, $JAM_STORE or --store, in that order
// of precedence, as every key; a URL is kept as given (the store checks it
// when it opens).
func TestLoad_store(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["JAM_CONFIG"] = b.writeFile(t, "store = \"postgres://jam:file-secret@db.example:5433/jam?sslmode=require\"\n")
	cfg, err := b.load(t)
	require.NoError(t, err)
	require.Equal(t, "postgres://jam:file-secret@db.example:5433/jam?sslmode=require", cfg.Store, "file")

	b.env["JAM_STORE"] = "postgresql://jam@localhost/other"
	cfg, err = b.load(t)
	require.NoError(t, err)
	require.Equal(t, "postgresql://jam@localhost/other", cfg.Store, "env beats file")

	cfg, err = b.load(t, "--store", "sqlite")
	require.NoError(t, err)
	require.Equal(t, "sqlite", cfg.Store, "flag beats env")
	require.True(t, config.IsPostgresURL("postgres://h/db"))
	require.False(t, config.IsPostgresURL("sqlite"))
}

func TestLoad_results(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg, err := b.load(t)
	require.NoError(t, err)
	require.Empty(t, cfg.CheckpointExclude)
	require.Zero(t, cfg.ChangeSetMaxPatchBytes)
	b.env["JAM_CONFIG"] = b.writeFile(t, "checkpoint_exclude = \" *.sqlite , /build/,,\"\nchangeset_max_patch_bytes = \"2MiB\"\n")
	cfg, err = b.load(t)
	require.NoError(t, err)
	require.Equal(t, []string{"*.sqlite", "/build/"}, cfg.CheckpointExclude)
	require.Equal(t, int64(2<<20), cfg.ChangeSetMaxPatchBytes)
	cfg, err = b.load(t, "--changeset-max-patch-bytes", "65536")
	require.NoError(t, err)
	require.Equal(t, int64(65536), cfg.ChangeSetMaxPatchBytes)
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "12": 12, "12B": 12, "3KiB": 3 << 10, "3K": 3 << 10, "8MiB": 8 << 20, " 8 MiB ": 8 << 20, "1GiB": 1 << 30, "2G": 2 << 30} {
		got, err := config.ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "MiB", "-1", "1.5MiB", "1TiB", "99999999999999999999", "4611686018427387904G", "1 0"} {
		_, err := config.ParseSize(bad)
		require.Error(t, err, bad)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8MiB", "1", "-1", "99G", "1KiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := config.ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d: negative", s, n)
		}
	})
}

func TestLoad_dataDirIsAbsolute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg, err := b.load(t, "--data-dir", "rel/dir")
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(cfg.DataDir))
	require.True(t, strings.HasSuffix(cfg.DataDir, "/rel/dir"))
}

func TestLoad_defaultFileIsOptional(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["XDG_CONFIG_HOME"] = filepath.Join(b.dir, "nowhere")
	cfg, err := b.load(t)
	require.NoError(t, err)
	require.Empty(t, cfg.ConfigFile)

	require.NoError(t, os.MkdirAll(filepath.Join(b.dir, "nowhere", "jam"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "nowhere", "jam", "config.toml"), []byte(`log_level = "error"`), 0o600))
	cfg, err = b.load(t)
	require.NoError(t, err)
	require.Equal(t, "error", cfg.LogLevel)
}

func TestLoad_errors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		file    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{name: "unknown file key", file: "log_levle = \"info\"\n", wantErr: "invalid configuration: log_levle (from config file "},
		{name: "unknown key lists known", file: "colour = \"red\"\n", wantErr: "unknown key (known keys: approval_timeout, band, band_key, band_timeout, changeset_max_patch_bytes, checkpoint_exclude, data_dir, hop_limit, http_addr, hub_addr, log_format, log_level, merge_requires_review, shutdown_timeout, store)"},
		{name: "file syntax", file: "log_level = \n", wantErr: "line 1:"},
		{name: "non-string value", file: "shutdown_timeout = 5\n", wantErr: "shutdown_timeout (from config file"},
		{name: "table value", file: "[store]\nkind = \"x\"\n", wantErr: "want a string, got map"},
		{name: "missing explicit file", args: []string{"--config", "/does/not/exist.toml"}, wantErr: "config file /does/not/exist.toml: no such file or directory"},
		{name: "bad address flag", args: []string{"--http-addr", "nonsense"}, wantErr: `http_addr (from --http-addr): "nonsense" is not host:port`},
		{name: "bad port", args: []string{"--http-addr", "127.0.0.1:99999"}, wantErr: "is not a number from 0 to 65535"},
		{name: "not loopback", args: []string{"--http-addr", "0.0.0.0:80"}, wantErr: "is not a loopback address"},
		{name: "hostname", args: []string{"--http-addr", "example.com:80"}, wantErr: "is not an IP address or localhost"},
		{name: "bad level env", env: map[string]string{"JAM_LOG_LEVEL": "loud"}, wantErr: `log_level (from $JAM_LOG_LEVEL): "loud" is not one of debug, info, warn, error`},
		{name: "bad format", args: []string{"--log-format", "xml"}, wantErr: `"xml" is not one of text, json`},
		{name: "bad duration", args: []string{"--shutdown-timeout", "soon"}, wantErr: `"soon" is not a duration`},
		{name: "duration too long", args: []string{"--shutdown-timeout", "2h"}, wantErr: "outside 100ms to 1m"},
		{name: "store neither sqlite nor postgres", args: []string{"--store", "sqlite3"}, wantErr: `store (from --store): "sqlite3" is not a known store (want sqlite or a postgres:// URL)`},
		{name: "unknown store hides credentials", args: []string{"--store", "mysql://u:secret@h/db"}, wantErr: `"…@h/db" is not a known store`},
		{name: "band url without key", args: []string{"--band", "https://app.band.ai"}, wantErr: "band_key (from band https://app.band.ai): a Band URL needs the person's user key"},
		{name: "band url with credentials", args: []string{"--band", "https://u:secret@app.band.ai", "--band-key", "k"}, wantErr: "is neither \"embedded\" nor an http(s) URL without credentials"},
		{name: "band not a url", args: []string{"--band", "app.band.ai"}, wantErr: "is neither"},
		{name: "band key with space", env: map[string]string{"JAM_BAND_KEY": "band_u_x y"}, wantErr: "band_key (from $JAM_BAND_KEY): the key contains white space"},
		{name: "hub addr off", args: []string{"--hub-addr", "off"}, wantErr: "the embedded hub needs an address"},
		{name: "hub addr public", args: []string{"--hub-addr", "8.8.8.8:4000"}, wantErr: "is not a loopback address"},
		{name: "empty data dir", args: []string{"--data-dir", ""}, wantErr: "data_dir (from --data-dir): empty path"},
		{name: "no home", env: map[string]string{"HOME": ""}, wantErr: "no data directory"},
		{name: "patch bound not a size", args: []string{"--changeset-max-patch-bytes", "lots"}, wantErr: `"lots" is not a size such as 8MiB`},
		{name: "patch bound too large", args: []string{"--changeset-max-patch-bytes", "16MiB"}, wantErr: "outside 64KiB to 15MiB"},
		{name: "patch bound too small", env: map[string]string{"JAM_CHANGESET_MAX_PATCH_BYTES": "100"}, wantErr: "outside 64KiB to 15MiB"},
		{name: "exclusion of everything", file: "checkpoint_exclude = \"*.db, /\"\n", wantErr: `glob "/" is empty`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for k, v := range tc.env {
				b.env[k] = v
				if v == "" {
					delete(b.env, k)
				}
			}
			if tc.file != "" {
				b.env["JAM_CONFIG"] = b.writeFile(t, tc.file)
			}
			_, err := b.load(t, tc.args...)
			require.Error(t, err)
			require.ErrorIs(t, err, jam.ErrInvalid)
			var cerr *config.Error
			require.True(t, errors.As(err, &cerr))
			require.Contains(t, err.Error(), tc.wantErr)
			require.NotContains(t, err.Error(), "\n", "configuration errors are one line")
			require.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestRegisterFlags_subset(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("client", pflag.ContinueOnError)
	config.RegisterFlags(fs, "data_dir")
	require.NotNil(t, fs.Lookup("data-dir"))
	require.NotNil(t, fs.Lookup("config"))
	require.Nil(t, fs.Lookup("http-addr"))
	config.RegisterFlags(fs) // adding the rest later does not panic on duplicates
	require.NotNil(t, fs.Lookup("http-addr"))
}
