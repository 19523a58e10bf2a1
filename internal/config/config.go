package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/jamhq/jam/internal/jam"
)

// Config is the validated configuration of jam and jamd.
type Config struct {
	// DataDir holds the store, the control socket, the lock and the API
	// token. Always absolute after Load.
	DataDir string
	// ConfigFile is the file the configuration was read from, if any.
	ConfigFile string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
	// HTTPAddr is the loopback TCP address of the HTTP listener (the
	// token-authenticated API and the web UI), or "" when it is off.
	HTTPAddr string
	// HTTPAddrSet: HTTPAddr was given (in the file, the environment or a
	// flag), not defaulted. Only the default address falls back to a
	// free port when its own is taken; a given one stops the start.
	HTTPAddrSet bool
	// ShutdownTimeout bounds a graceful stop.
	ShutdownTimeout time.Duration
	// Store selects the storage backend: "sqlite" (the file jam.db in
	// DataDir) or a postgres:// URL. A URL may hold a password: it is
	// never printed, logged or passed on a command line by jam; show the
	// store's Info location instead.
	Store string
	// Band is "embedded" (run the hub inside the daemon) or the REST base
	// URL of a Band deployment, such as https://app.band.ai.
	Band string
	// BandKey is the person's Band user key; required with a Band URL.
	BandKey string
	// HubAddr is where the embedded hub listens (loopback only).
	HubAddr string
	// BandTimeout bounds one REST request to Band. Zero means the
	// default (15s).
	BandTimeout time.Duration
	// CheckpointExclude are globs of paths no checkpoint records, beside
	// the built-in credential files.
	CheckpointExclude []string
	// ChangeSetMaxPatchBytes bounds a change set's stored patch; 0 means
	// the default (8 MiB).
	ChangeSetMaxPatchBytes int64
	// ApprovalTimeout is how long an agent's question to the person waits
	// before it is denied; 0 means the default (10m).
	ApprovalTimeout time.Duration
	// HopLimit bounds the agent messages in a row in one room with no
	// person in between; 0 means the default (8), -1 no limit.
	HopLimit int
	// MergeRequiresReview asks the review gate of every merge: the
	// delivered change set's newest validated review must approve it.
	MergeRequiresReview bool
}

// BandEmbedded selects the embedded hub.
const BandEmbedded = "embedded"

// Default values.
const (
	DefaultLogLevel        = "info"
	DefaultLogFormat       = "text"
	DefaultShutdownTimeout = 4 * time.Second
	DefaultStore           = "sqlite"
	DefaultHubAddr         = "127.0.0.1:0"
	// DefaultHTTPAddr is where the HTTP API and the web UI listen unless
	// configured: a fixed port, so the UI's address (and its session
	// cookie) stay the same across restarts. When it is taken, the daemon
	// listens on a free port instead and prints it.
	DefaultHTTPAddr = "127.0.0.1:7420"
	// ConfigFlag names the flag that selects the configuration file.
	ConfigFlag = "config"
	// ConfigEnv names the variable that selects the configuration file.
	ConfigEnv = "JAM_CONFIG"
)

// Error is a configuration error: one key, where its value came from, and
// what is wrong with it.
type Error struct {
	// Source is "--flag", "$JAM_VAR", "config file PATH" or "default".
	Source string
	// Key is the configuration key, or "" for a file-level problem.
	Key string
	Err error
}

func (e *Error) Error() string {
	if e.Key == "" {
		return oneLine(fmt.Sprintf("invalid configuration: %s: %v", e.Source, e.Err))
	}
	return oneLine(fmt.Sprintf("invalid configuration: %s (from %s): %v", e.Key, e.Source, e.Err))
}

// Unwrap lets errors.Is find jam.ErrInvalid and the cause.
func (e *Error) Unwrap() []error { return []error{jam.ErrInvalid, e.Err} }

// oneLine folds a message onto one line so the CLI can print it as such.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Env looks up an environment variable; os.LookupEnv in production.
type Env func(key string) (string, bool)

// LoadParams are the inputs of Load.
type LoadParams struct {
	// Flags holds any of the key flags and the --config flag; flags that
	// are not registered are simply not a source.
	Flags *pflag.FlagSet
	// Env defaults to os.LookupEnv.
	Env Env
}

// RegisterFlags adds the --config flag and the flags of the named keys (all
// keys when names is empty) to fs.
func RegisterFlags(fs *pflag.FlagSet, names ...string) {
	if fs.Lookup(ConfigFlag) == nil {
		fs.String(ConfigFlag, "", "configuration file (TOML); $"+ConfigEnv+", else $XDG_CONFIG_HOME/jam/config.toml when present")
	}
	for _, k := range keys {
		if len(names) > 0 && !contains(names, k.name) {
			continue
		}
		if fs.Lookup(k.flag()) == nil {
			fs.String(k.flag(), "", k.usage+" ($"+k.env()+")")
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Load builds the configuration: defaults, then the file, then the
// environment, then flags, and validates the result.
func Load(p LoadParams) (Config, error) {
	env := p.Env
	if env == nil {
		env = os.LookupEnv
	}
	cfg := Config{
		LogLevel:        DefaultLogLevel,
		LogFormat:       DefaultLogFormat,
		ShutdownTimeout: DefaultShutdownTimeout,
		Store:           DefaultStore,
		Band:            BandEmbedded,
		HubAddr:         DefaultHubAddr,
		HTTPAddr:        DefaultHTTPAddr,
	}
	path, explicit, err := configFile(p.Flags, env)
	if err != nil {
		return Config{}, err
	}
	if path != "" {
		raw, err := os.ReadFile(path)
		switch {
		case err == nil:
			if err := applyFile(&cfg, path, raw); err != nil {
				return Config{}, err
			}
			cfg.ConfigFile = path
		case errors.Is(err, os.ErrNotExist) && !explicit:
			// The default location is optional.
		default:
			return Config{}, &Error{Source: "config file " + path, Err: unwrapPath(err)}
		}
	}
	for _, k := range keys {
		// An empty variable counts as unset, as in most shells' idiom
		// "JAM_X= jam up".
		if v, ok := env(k.env()); ok && v != "" {
			if err := k.set(&cfg, v); err != nil {
				return Config{}, &Error{Source: "$" + k.env(), Key: k.name, Err: err}
			}
		}
	}
	if p.Flags != nil {
		for _, k := range keys {
			f := p.Flags.Lookup(k.flag())
			if f == nil || !f.Changed {
				continue
			}
			if err := k.set(&cfg, f.Value.String()); err != nil {
				return Config{}, &Error{Source: "--" + k.flag(), Key: k.name, Err: err}
			}
		}
	}
	if cfg.Band != BandEmbedded && cfg.BandKey == "" {
		return Config{}, &Error{Source: "band " + cfg.Band, Key: "band_key", Err: errors.New("a Band URL needs the person's user key (band_key, $JAM_BAND_KEY)")}
	}
	if cfg.DataDir == "" {
		dir, err := defaultDataDir(env)
		if err != nil {
			return Config{}, &Error{Source: "default", Key: "data_dir", Err: err}
		}
		cfg.DataDir = dir
	}
	return cfg, nil
}

// configFile returns the configuration file to read and whether the user
// named it explicitly.
func configFile(fs *pflag.FlagSet, env Env) (string, bool, error) {
	if fs != nil {
		if f := fs.Lookup(ConfigFlag); f != nil && f.Changed {
			if f.Value.String() == "" {
				return "", false, &Error{Source: "--" + ConfigFlag, Err: errors.New("empty path")}
			}
			return f.Value.String(), true, nil
		}
	}
	if v, ok := env(ConfigEnv); ok && v != "" {
		return v, true, nil
	}
	if dir, ok := env("XDG_CONFIG_HOME"); ok && filepath.IsAbs(dir) {
		return filepath.Join(dir, "jam", "config.toml"), false, nil
	}
	if home, ok := env("HOME"); ok && filepath.IsAbs(home) {
		return filepath.Join(home, ".config", "jam", "config.toml"), false, nil
	}
	return "", false, nil
}

// defaultDataDir follows the XDG base directory specification.
func defaultDataDir(env Env) (string, error) {
	if dir, ok := env("XDG_DATA_HOME"); ok && filepath.IsAbs(dir) {
		return filepath.Join(dir, "jam"), nil
	}
	if home, ok := env("HOME"); ok && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "share", "jam"), nil
	}
	return "", errors.New("no data directory: set --data-dir, $JAM_DATA_DIR, $XDG_DATA_HOME or $HOME")
}

// applyFile decodes a TOML configuration file onto cfg.
func applyFile(cfg *Config, path string, raw []byte) error {
	src := "config file " + path
	var doc map[string]any
	if _, err := toml.Decode(string(raw), &doc); err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return &Error{Source: src, Err: fmt.Errorf("line %d: %s", perr.Position.Line, perr.Message)}
		}
		return &Error{Source: src, Err: err}
	}
	for name, v := range doc {
		k, ok := keyNamed(name)
		if !ok {
			return &Error{Source: src, Key: name, Err: fmt.Errorf("unknown key (known keys: %s)", strings.Join(keyNames(), ", "))}
		}
		s, ok := v.(string)
		if !ok {
			return &Error{Source: src, Key: name, Err: fmt.Errorf("want a string, got %T", v)}
		}
		if err := k.set(cfg, s); err != nil {
			return &Error{Source: src, Key: name, Err: err}
		}
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseLoopbackAddr accepts "", "off", or host:port where host is
// "localhost" or a loopback IP; it returns "" for off.
func ParseLoopbackAddr(s string) (string, error) {
	if s == "" || s == "off" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%q: port %q is not a number from 0 to 65535", s, port)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", fmt.Errorf("%q: host %q is not an IP address or localhost", s, host)
	}
	if !ip.IsLoopback() {
		return "", fmt.Errorf("%q: host %s is not a loopback address (the HTTP listener never leaves this machine)", s, host)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(n)), nil
}
