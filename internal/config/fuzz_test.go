package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// FuzzApplyFile feeds arbitrary text to the configuration file decoder. It
// works in memory so every run is deterministic and cheap.
func FuzzApplyFile(f *testing.F) {
	f.Add("log_level = \"info\"\n")
	f.Add("http_addr = \"127.0.0.1:0\"\nshutdown_timeout = \"1s\"\n")
	f.Add("[x]\ny = 1\n")
	f.Add("data_dir = \"\\u0000\"\n")
	f.Add("store = \"postgres://u:pw@h/db\"\n")
	f.Fuzz(func(t *testing.T, body string) {
		cfg := Config{ShutdownTimeout: DefaultShutdownTimeout}
		err := applyFile(&cfg, "/fuzz/config.toml", []byte(body))
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			if strings.Contains(err.Error(), "pw@") {
				t.Fatalf("error leaks a credential: %q", err)
			}
			return
		}
		if cfg.DataDir != "" && !filepath.IsAbs(cfg.DataDir) {
			t.Fatalf("data dir %q is not absolute", cfg.DataDir)
		}
		if cfg.ShutdownTimeout < 100*time.Millisecond || cfg.ShutdownTimeout > time.Minute {
			t.Fatalf("shutdown timeout %s escaped validation", cfg.ShutdownTimeout)
		}
	})
}
