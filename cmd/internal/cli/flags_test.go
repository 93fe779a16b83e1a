package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/specloop/specloop/sandbox"
)

// TestSandboxFlags: the sandbox flags make the policy they name.
func TestSandboxFlags(t *testing.T) {
	var f SandboxFlags
	fs := (&Env{Prog: "specloop", Stdout: os.Stdout, Stderr: os.Stderr}).FlagSet("x", "", "")
	f.Register(fs)
	if err := fs.Parse([]string{"--pass-env", "A", "--pass-env", "B", "--allow-network", "--allow-git-writes", "--sandbox", "bwrap"}); err != nil {
		t.Fatal(err)
	}
	p, err := f.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Backend != sandbox.Bwrap || !p.AllowNetwork || !p.AllowGitWrites || strings.Join(p.PassEnv, ",") != "A,B" {
		t.Fatalf("policy %+v", p)
	}
}
