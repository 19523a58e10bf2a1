// Package version reports which build of jam is running.
package version

import (
	"runtime"
	"runtime/debug"
)

// version is the release this source tree will become. Release builds set
// it with -ldflags "-X github.com/jamhq/jam/internal/version.version=v1.2.3".
var version = "0.1.0-dev"

// Info describes the running build.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	Platform  string `json:"platform"`
}

// Get returns the running build's Info.
func Get() Info {
	info := Info{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String returns the version alone.
func String() string { return version }
