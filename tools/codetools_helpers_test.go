package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// wsRuntime opens dir as a workspace and returns a runtime over it with
// commands enabled.
func wsRuntime(t testing.TB, dir string) *tools.Runtime {
	t.Helper()
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// callTool runs one tool call with a deadline, so a tool that blocks (on a FIFO,
// say) fails the test instead of hanging it.
func callTool(t testing.TB, rt *tools.Runtime, tool string, args map[string]any) gen.Observation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	obs, err := rt.Call(ctx, &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: internal error: %v", tool, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s: did not return within its deadline", tool)
	}
	return obs
}

// mustSucceed fails the test when obs is an error.
func mustSucceed(t testing.TB, obs gen.Observation) gen.Observation {
	t.Helper()
	if obs.IsError {
		t.Fatalf("%s failed: %s (%s)", obs.ToolName, obs.Content, code(obs))
	}
	if obs.Data == nil {
		t.Fatalf("%s: no data", obs.ToolName)
	}
	return obs
}

func code(obs gen.Observation) string {
	if obs.ErrorCode == nil {
		return ""
	}
	return string(*obs.ErrorCode)
}

// writeFiles creates files (path -> content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot records every path under dir with its content (or mode for
// non-regular files), to prove nothing there changed.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode().IsRegular():
			out[rel] = readFile(t, p)
		default:
			out[rel] = fi.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func data(obs gen.Observation) map[string]any {
	if obs.Data == nil {
		return nil
	}
	return *obs.Data
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }
