package wiring_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

// none is the sandbox every test here can use: the machine running the
// tests may have neither bwrap nor Landlock.
var none = sandbox.Policy{Backend: sandbox.None, AllowNetwork: true}

func toolNames(rt *tools.Runtime) []string {
	var names []string
	for _, s := range rt.Specs() {
		names = append(names, s.Name)
	}
	return names
}

// TestOpenWithoutCommands: with commands off and no check nothing is
// sandboxed (no sandbox need be available); with a check the check alone
// is, under the configured policy.
func TestOpenWithoutCommands(t *testing.T) {
	s, err := wiring.Open(wiring.Config{Dir: t.TempDir(), DisableCommands: true, Sandbox: sandbox.Policy{Backend: "chroot"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Sandbox != nil || s.Check != nil || s.Options.Check != nil || s.Options.Trace != nil {
		t.Errorf("setup without commands, check or trace: %+v", s)
	}
	if slices.Contains(toolNames(s.Runtime), "run_command") {
		t.Errorf("commands are off but offered")
	}

	s, err = wiring.Open(wiring.Config{Dir: t.TempDir(), DisableCommands: true, Sandbox: none, Check: "true"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Sandbox == nil || s.Check.Sandbox != s.Sandbox || !s.Check.SandboxInfo().Network {
		t.Errorf("the check is not confined by the configured policy")
	}
	if s.Runtime.SandboxInfo() != nil {
		t.Errorf("a runtime without commands reports a sandbox")
	}
}

// TestOpenErrorsNameThePart: a caller tells a bad workspace, sandbox or
// trace apart to name its own flag or field.
func TestOpenErrorsNameThePart(t *testing.T) {
	foreign := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(foreign, []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  wiring.Config
		part wiring.Part
	}{
		{"missing workspace", wiring.Config{Dir: filepath.Join(t.TempDir(), "nope"), DisableCommands: true}, wiring.PartWorkspace},
		{"unknown sandbox", wiring.Config{Dir: t.TempDir(), Sandbox: sandbox.Policy{Backend: "chroot"}}, wiring.PartSandbox},
		{"a check needs a sandbox too", wiring.Config{Dir: t.TempDir(), DisableCommands: true, Check: "true", Sandbox: sandbox.Policy{Backend: "chroot"}}, wiring.PartSandbox},
		{"foreign trace file", wiring.Config{Dir: t.TempDir(), DisableCommands: true, TracePath: foreign}, wiring.PartTrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := wiring.Open(tc.cfg)
			var we *wiring.Error
			if s != nil || !errors.As(err, &we) || we.Part != tc.part {
				t.Fatalf("got %v, %v; want a %s error", s, err, tc.part)
			}
			if !strings.HasPrefix(err.Error(), string(tc.part)+": ") {
				t.Errorf("message %q does not name the part", err)
			}
		})
	}
	data, _ := os.ReadFile(foreign)
	if string(data) != "package main\n" {
		t.Errorf("the foreign file was written: %q", data)
	}
}

// TestCloseLeavesWhatWasHandedIn: a root the caller opened stays usable
// after Close; a trace file Open created is closed and holds the run.
func TestCloseLeavesWhatWasHandedIn(t *testing.T) {
	dir := t.TempDir()
	tracePath := filepath.Join(t.TempDir(), "t.jsonl")
	s, err := wiring.Open(wiring.Config{Dir: dir, DisableCommands: true, TracePath: tracePath, TraceSync: trace.SyncAtRunEnd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(context.Background(), gen.Task{Prompt: "p"}, model.NewScript(`{"type":"finish","answer":"a"}`), s.Options); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(s.Close(), s.Close()); err != nil {
		t.Fatalf("close twice: %v", err)
	}
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if log, err := trace.Read(f); err != nil || log.Events[len(log.Events)-1].EventType != gen.TraceEventTypeRunFinished {
		t.Fatalf("trace: %v %+v", err, log)
	}

	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s, err = wiring.Open(wiring.Config{Root: root, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workspace.Dir() == "" {
		t.Error("a workspace opened in a root has no directory")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Stat("."); err != nil {
		t.Errorf("the handed-in root was closed: %v", err)
	}
}

// A setup with a LockDir holds its workspace until Close: another setup of
// the same directory with NoWait fails with ErrWorkspaceBusy, a waiting
// one gets it once the first is closed, and a lock directory inside the
// workspace is refused.
func TestSetupHoldsTheWorkspace(t *testing.T) {
	ws, locks := t.TempDir(), t.TempDir()
	cfg := wiring.Config{Dir: ws, DisableCommands: true, LockDir: locks}
	first, err := wiring.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	busy := cfg
	busy.NoWait = true
	if _, err := wiring.Open(busy); !errors.Is(err, wiring.ErrWorkspaceBusy) {
		t.Fatalf("a second setup of a held workspace: %v, want ErrWorkspaceBusy", err)
	}
	waited := make(chan string, 1)
	waiting := cfg
	waiting.Waiting = func(holder string) { waited <- holder }
	got := make(chan error, 1)
	go func() {
		s, err := wiring.Open(waiting)
		if err == nil {
			err = s.Close()
		}
		got <- err
	}()
	if h := <-waited; !strings.HasPrefix(h, "pid ") {
		t.Errorf("the holder said %q", h)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiting setup: %v", err)
	}
	inside := cfg
	inside.LockDir = filepath.Join(ws, ".locks")
	if _, err := wiring.Open(inside); !errors.Is(err, wiring.ErrRecordsInWorkspace) {
		t.Fatalf("a lock directory inside the workspace: %v", err)
	}
}
