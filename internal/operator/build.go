package operator

import (
	"fmt"
	"runtime/debug"
)

// Build is what the binary knows of its own build: the release version (from the git tag), the
// commit and the build date, set by the release's -ldflags.
type Build struct {
	Version, Commit, Date string
}

// String is the --version text.
func (b Build) String() string {
	return fmt.Sprintf("%s (commit %s, built %s)", b.Version, or(b.Commit, "unknown"), or(b.Date, "unknown"))
}

// WithVCS fills the commit and the date that -ldflags did not set from what the Go toolchain
// stamped into the binary (a `go build` inside a git checkout), so that a binary built without
// the Makefile still says which commit it is.
func (b Build) WithVCS() Build {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && b.Commit == "":
			b.Commit = s.Value
		case s.Key == "vcs.time" && b.Date == "":
			b.Date = s.Value
		}
	}
	return b
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
