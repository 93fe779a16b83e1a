//go:build !unix

package mcpclient

import "os/exec"

// ownProcessGroup does nothing where process groups do not exist.
func ownProcessGroup(*exec.Cmd) {}

// killProcessGroup does nothing: Close has already stopped the server.
func killProcessGroup(*exec.Cmd) {}
