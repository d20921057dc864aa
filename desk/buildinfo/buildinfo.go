// Package buildinfo says what the running binary was built from: the
// module version, the VCS revision and the Go version, as the build
// recorded them (debug.ReadBuildInfo).
package buildinfo

import "runtime/debug"

// Version is what deskd version and deskd --version print after the
// name: the module version, the VCS revision the binary was built from
// (with +dirty when the work tree had uncommitted changes) and its commit
// time, or a note that the build recorded none, and the Go version.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information: built without module support)"
	}
	var revision, when string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	v := info.Main.Version // v0.0.0-<time>-<revision>[+dirty] for a build in a checkout
	if revision == "" {
		return v + " (no VCS revision recorded: go run and -buildvcs=false leave it out; build with go build -buildvcs=true ./cmd/deskd in a git checkout), " + info.GoVersion
	}
	v += ", revision " + revision[:min(12, len(revision))]
	if dirty {
		v += " with uncommitted changes"
	}
	if when != "" {
		v += ", committed " + when
	}
	return v + ", " + info.GoVersion
}
