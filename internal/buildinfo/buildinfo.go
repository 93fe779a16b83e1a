// Package buildinfo tells which specloop this binary is, for the
// implementation name MCP peers are given.
package buildinfo

import "runtime/debug"

// Version is the main module's version, or "(devel)" for a build from a
// work tree.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Revision is the VCS revision the binary was built from, "+modified"
// when its work tree had changes, or "" when the build did not record one.
func Revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			modified = "+modified"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + modified
}
