// Package demo holds what `specloop demo` runs: a small Go module whose test
// fails, a task, the completion check, and the scripted model responses
// that fix the bug through the code tools (search, read_file, edit_file,
// run_command, then finish).
//
// The module lives in _module, a directory the go command ignores, so its
// failing test is not part of specloop's own test suite; its go.mod is
// stored as go.mod.txt because a go.mod would make it a separate module
// that cannot be embedded.
package demo

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

//go:embed all:_module
var module embed.FS

//go:embed script.jsonl
var script string

const (
	// ModuleName names the directory the module is written to.
	ModuleName = "roman"
	// Task is the prompt of the demo run.
	Task = "The tests of this Go module fail: roman.Format(4) returns \"IIII\" instead of \"IV\". " +
		"Find the bug, fix it, and make `go test ./...` pass."
	// Check is the completion check: the run finishes only when it passes.
	Check = "go test ./..."
	// MaxSteps is the demo's step budget; the script needs five.
	MaxSteps = 10
)

// CheckEnv makes the check independent of the user's Go settings: the
// module has no dependencies, needs no go.work and no other toolchain, so
// it builds offline.
var CheckEnv = []string{"GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"}

// Script returns the model's responses, one raw action a line of
// script.jsonl, in order.
func Script() []string {
	return strings.Split(strings.TrimSpace(script), "\n")
}

// WriteModule writes the module into dir, which must not exist yet or be
// empty.
func WriteModule(dir string) error {
	sub, err := fs.Sub(module, "_module")
	if err == nil {
		err = os.CopyFS(dir, sub)
	}
	if err != nil {
		return err
	}
	return os.Rename(filepath.Join(dir, "go.mod.txt"), filepath.Join(dir, "go.mod"))
}
