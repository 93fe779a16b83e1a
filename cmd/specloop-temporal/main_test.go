package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/cmd/internal/readmetest"
)

// specloopTemporal runs the command in-process and returns its exit status
// and output.
func specloopTemporal(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// Help is asked for in every way a person tries, exits 0 and names the
// flags that connect the command to Temporal.
func TestHelp(t *testing.T) {
	code, stdout, _ := specloopTemporal(t, "help")
	if code != 0 || !strings.Contains(stdout, "Usage: specloop-temporal COMMAND") || !strings.Contains(stdout, "worker") || !strings.Contains(stdout, "serve") {
		t.Fatalf("help: exit %d:\n%s", code, stdout)
	}
	for _, name := range []string{"serve", "worker"} {
		code, stdout, stderr := specloopTemporal(t, "help", name)
		if code != 0 || !strings.Contains(stdout, "Usage: specloop-temporal "+name) {
			t.Fatalf("help %s: exit %d: %s%s", name, code, stdout, stderr)
		}
		for _, want := range []string{"-temporal-address", "-task-queue", "-store", "-workspace-root", "-sandbox", "specloop-temporal "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("help %s does not mention %s", name, want)
			}
		}
		if code, _, stderr := specloopTemporal(t, name, "--help"); code != 0 || !strings.Contains(stderr, "Usage: specloop-temporal "+name) {
			t.Fatalf("%s --help: exit %d:\n%s", name, code, stderr)
		}
	}
	// serve's help is that of specloop serve, with where the runs go.
	_, stdout, _ = specloopTemporal(t, "help", "serve")
	for _, want := range []string{"-token-file", "-allowed-host", "-max-concurrent", "go on in\nTemporal"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help serve does not mention %q", want)
		}
	}
	if code, _, stderr := specloopTemporal(t, "run"); code != 2 || !strings.Contains(stderr, `unknown command "run"`) {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
}

// TestStoreInWorkspaceRootRefused: a --store inside the workspace root,
// given or by default, is refused at start by serve and worker alike, with
// a message that names both flags, before either connects to Temporal.
func TestStoreInWorkspaceRootRefused(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", root, "--store", filepath.Join(root, "s")},
		{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", root},
		{"worker", "--workspace-root", root, "--store", filepath.Join(root, "specloop-store")},
		{"worker", "--workspace-root", root, "--store", "file://" + filepath.Join(root, "specloop-store")},
		{"worker", "--workspace-root", root},
	} {
		code, _, stderr := specloopTemporal(t, args...)
		if code != 2 || !strings.Contains(stderr, "--store ") || !strings.Contains(stderr, "--workspace-root") || !strings.Contains(stderr, "outside") {
			t.Errorf("%v: exit %d, stderr:\n%s", args, code, stderr)
		}
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("a refused directory was created: %v %v", entries, err)
	}
}

// TestStoreBucketNeedsItsDriver: an object store URL is not a directory
// (no workspace check), and a scheme no linked driver serves is refused
// by name, without repeating the URL's query (it may hold credentials).
func TestStoreBucketNeedsItsDriver(t *testing.T) {
	code, _, stderr := specloopTemporal(t, "worker", "--workspace-root", t.TempDir(), "--store", "nosuch://bucket?secret=hunter2")
	if code == 0 || !strings.Contains(stderr, "no driver for nosuch://") || !strings.Contains(stderr, "s3") || strings.Contains(stderr, "hunter2") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestReadmeShellExamples: the README's specloop-temporal commands parse
// as written (every flag known, every value valid).
func TestReadmeShellExamples(t *testing.T) {
	n := 0
	var cmds []readmetest.Command
	for _, doc := range readmetest.Docs(t, "../..") {
		cmds = append(cmds, readmetest.ShellBlocks(t, doc)...)
	}
	for _, c := range cmds {
		w := c.Words
		switch {
		case len(w) >= 3 && w[0] == "go" && w[1] == "run" && w[2] == "./cmd/specloop-temporal":
			w = w[3:]
		case len(w) >= 1 && w[0] == "specloop-temporal":
			w = w[1:]
		default:
			continue
		}
		n++
		if code, stdout, stderr := specloopTemporal(t, append(slices.Clip(w), "-h")...); code != 0 {
			t.Errorf("%s: specloop-temporal %s: exit %d\nstdout: %s\nstderr: %s", c.At(), strings.Join(w, " "), code, stdout, stderr)
		}
	}
	if n < 2 {
		t.Fatalf("the docs show %d specloop-temporal commands, want its worker and its serve", n)
	}
}

// TestWorkerCloneCacheInWorkspaceRootRefused: a worker's --clone-cache
// inside its workspace root (where runs could change the objects other
// runs' work trees read) is refused at start, as is a malformed
// --clone-hosts, before the worker connects to Temporal.
func TestWorkerCloneCacheInWorkspaceRootRefused(t *testing.T) {
	root := t.TempDir()
	store := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--clone-hosts", "example.com", "--clone-cache", filepath.Join(root, "clones")}, "--clone-cache"},
		{[]string{"--clone-hosts", "example.com", "--clone-cache", root}, "--clone-cache"},
		{[]string{"--clone-hosts", "https://example.com"}, "clone-hosts"},
	} {
		code, _, stderr := specloopTemporal(t, append([]string{"worker", "--workspace-root", root, "--store", store}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d, stderr:\n%s", c.args, code, stderr)
		}
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("a refused directory was created: %v %v", entries, err)
	}
}
