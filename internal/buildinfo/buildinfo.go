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
