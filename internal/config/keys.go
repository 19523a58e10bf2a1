package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// key is one configuration key and how every source spells and parses it.
type key struct {
	// name is the file key; the flag is name with '-' for '_', and the
	// environment variable is JAM_ + upper-case name.
	name  string
	usage string
	set   func(cfg *Config, v string) error
}

func (k key) flag() string { return strings.ReplaceAll(k.name, "_", "-") }
func (k key) env() string  { return "JAM_" + strings.ToUpper(k.name) }

// keys is the one table of configuration keys.
var keys = []key{
	{name: "data_dir", usage: "data directory (store, control socket, lock, API token)", set: func(c *Config, v string) error {
		if v == "" {
			return errors.New("empty path")
		}
		if strings.ContainsRune(v, 0) {
			return errors.New("path contains a NUL byte")
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return err
		}
		c.DataDir = abs
		return nil
	}},
	{name: "log_level", usage: "log level: debug, info, warn or error", set: func(c *Config, v string) error {
		switch v {
		case "debug", "info", "warn", "error":
			c.LogLevel = v
			return nil
		}
		return fmt.Errorf("%q is not one of debug, info, warn, error", v)
	}},
	{name: "log_format", usage: "log format: text or json", set: func(c *Config, v string) error {
		switch v {
		case "text", "json":
			c.LogFormat = v
			return nil
		}
		return fmt.Errorf("%q is not one of text, json", v)
	}},
	{name: "http_addr", usage: `loopback address of the web UI and the token-authenticated HTTP API (default 127.0.0.1:7420; port 0 picks one; "off" disables)`, set: func(c *Config, v string) error {
		addr, err := ParseLoopbackAddr(v)
		if err != nil {
			return err
		}
		c.HTTPAddr, c.HTTPAddrSet = addr, true
		return nil
	}},
	{name: "shutdown_timeout", usage: "how long a graceful stop may take, e.g. 4s (100ms to 1m)", set: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 4s", v)
		}
		if d < 100*time.Millisecond || d > time.Minute {
			return fmt.Errorf("%s is outside 100ms to 1m", d)
		}
		c.ShutdownTimeout = d
		return nil
	}},
	{name: "store", usage: `storage backend: "sqlite" (jam.db in the data directory) or a postgres://user@host:port/database URL (prefer the config file or $JAM_STORE for a URL with a password)`, set: func(c *Config, v string) error {
		switch {
		case v == "sqlite":
			c.Store = v
			return nil
		case IsPostgresURL(v):
			// The URL itself is checked when the store opens, whose
			// errors never show the password.
			c.Store = v
			return nil
		}
		return fmt.Errorf("%q is not a known store (want sqlite or a postgres:// URL)", clipValue(v))
	}},
	{name: "band", usage: `"embedded" to run jam's own hub, or a Band URL such as https://app.band.ai`, set: func(c *Config, v string) error {
		if v == BandEmbedded {
			c.Band = v
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("%q is neither %q nor an http(s) URL without credentials", clipValue(v), BandEmbedded)
		}
		c.Band = strings.TrimRight(u.String(), "/")
		return nil
	}},
	{name: "band_key", usage: "the person's Band user key (band_u_…), with a Band URL", set: func(c *Config, v string) error {
		if strings.ContainsAny(v, " \t\r\n") {
			return errors.New("the key contains white space")
		}
		c.BandKey = v
		return nil
	}},
	{name: "band_timeout", usage: "how long one REST request to Band may take, e.g. 15s (1s to 5m)", set: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 15s", v)
		}
		if d < time.Second || d > 5*time.Minute {
			return fmt.Errorf("%s is outside 1s to 5m", d)
		}
		c.BandTimeout = d
		return nil
	}},
	{name: "hub_addr", usage: "loopback address of the embedded hub (port 0 picks one)", set: func(c *Config, v string) error {
		addr, err := ParseLoopbackAddr(v)
		if err != nil {
			return err
		}
		if addr == "" {
			return errors.New("the embedded hub needs an address; use band to choose another Band")
		}
		c.HubAddr = addr
		return nil
	}},
	{name: "checkpoint_exclude", usage: "comma-separated globs of further paths no checkpoint records, beside the built-in credential files (.env*, *.pem, *.key, id_rsa*, .netrc, cloud credentials), e.g. \"*.sqlite,/build/\"", set: func(c *Config, v string) error {
		var globs []string
		for _, g := range strings.Split(v, ",") {
			g = strings.TrimSpace(g)
			if g == "" {
				continue
			}
			if g == "/" || strings.ContainsAny(g, "\x00\n") {
				return fmt.Errorf("glob %q is empty, only \"/\", or holds a NUL or newline", g)
			}
			globs = append(globs, g)
		}
		c.CheckpointExclude = globs
		return nil
	}},
	{name: "changeset_max_patch_bytes", usage: "largest patch a change set keeps, e.g. 8MiB (64KiB to 15MiB); a larger one is kept as its manifest and checkpoints", set: func(c *Config, v string) error {
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		if n < 64<<10 || n > 15<<20 {
			return fmt.Errorf("%d bytes is outside 64KiB to 15MiB", n)
		}
		c.ChangeSetMaxPatchBytes = n
		return nil
	}},
	{name: "approval_timeout", usage: "how long an agent's question (permission ask) waits for the person before it is denied, e.g. 10m (10s to 24h)", set: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 10m", v)
		}
		if d < 10*time.Second || d > 24*time.Hour {
			return fmt.Errorf("%s is outside 10s to 24h", d)
		}
		c.ApprovalTimeout = d
		return nil
	}},
	{name: "hop_limit", usage: "agent messages in a row in one room, with no person in between, after which a message from an agent is acknowledged unanswered and the room told (1 to 1000, or off)", set: func(c *Config, v string) error {
		if strings.TrimSpace(v) == "off" {
			c.HopLimit = -1
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("%q is not a whole number from 1 to 1000, nor off", v)
		}
		c.HopLimit = n
		return nil
	}},
	{name: "merge_requires_review", usage: "refuse every merge (jam merge) unless the newest validated review of the delivered change set approves it (true or false)", set: func(c *Config, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		c.MergeRequiresReview = b
		return nil
	}},
}

// ParseSize reads a byte count: a whole number with an optional unit
// (B, KiB, MiB, GiB; also K, M, G as the binary units).
func ParseSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size such as 8MiB", v)
	}
	return n * mult, nil
}

func keyNamed(name string) (key, bool) {
	for _, k := range keys {
		if k.name == name {
			return k, true
		}
	}
	return key{}, false
}

func keyNames() []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.name)
	}
	sort.Strings(out)
	return out
}

// IsPostgresURL reports whether a store value selects the PostgreSQL
// store: a postgres:// or postgresql:// URL.
func IsPostgresURL(v string) bool {
	return strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://")
}

// clipValue keeps credentials in a mistyped URL out of error messages.
func clipValue(v string) string {
	if i := strings.LastIndex(v, "@"); i >= 0 {
		return "…" + v[i:]
	}
	return v
}
