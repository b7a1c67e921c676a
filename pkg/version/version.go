// Package version carries the build stamp set through -ldflags at release time.
package version

import "runtime"

// Set by -ldflags "-X github.com/kubectl-nodestate/kubectl-nodestate/pkg/version.version=..." etc.
var (
	version = "v0.0.0-dev"
	commit  = "unknown"
	date    = "unknown"
)

// Info is the build stamp of this binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build stamp of this binary.
func Get() Info {
	return Info{
		Version:   version,
		Commit:    commit,
		Date:      date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}
