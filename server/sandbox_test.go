package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/server"
)

// Commands are only allowed with a sandbox that works here, or with none
// asked for by name.
func TestAllowCommandsNeedsASandbox(t *testing.T) {
	newServer := func(p sandbox.Policy) error {
		srv, err := server.New(server.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), AllowCommands: true, Sandbox: p})
		if err == nil {
			srv.Shutdown(context.Background())
		}
		return err
	}
	if err := newServer(sandbox.Policy{Backend: "chroot"}); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("an unusable sandbox was accepted: %v", err)
	}
	if err := newServer(sandbox.Policy{Backend: sandbox.None}); err != nil {
		t.Fatalf("none, asked for by name: %v", err)
	}
	for _, b := range []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap} {
		err := newServer(sandbox.Policy{Backend: b})
		if (err == nil) != (sandbox.Available(b) == nil) {
			t.Fatalf("%s: %v", b, err)
		}
	}
}
