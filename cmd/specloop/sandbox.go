package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/specloop/specloop/sandbox"
)

// sandboxFlags are the flags that choose how commands (run_command and the
// completion check) are confined, shared by run, demo and serve.
type sandboxFlags struct {
	backend        string
	allowNetwork   bool
	allowGitWrites bool
	passEnv        stringList
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "sandbox", string(sandbox.Auto), "how commands are confined: auto (bwrap if it works here, else landlock), landlock, bwrap or none (unconfined)")
	fs.BoolVar(&f.allowNetwork, "allow-network", false, "let commands use the network")
	fs.BoolVar(&f.allowGitWrites, "allow-git-writes", false, "let commands write under the workspace's .git (read-only by default)")
	fs.Var(&f.passEnv, "pass-env", "pass this environment variable to commands besides PATH, LANG, LC_*, TERM and the Go variables (repeatable)")
}

// policy checks the flags.
func (f *sandboxFlags) policy() (sandbox.Policy, error) {
	b, err := sandbox.ParseBackend(f.backend)
	if err != nil {
		return sandbox.Policy{}, fmt.Errorf("--sandbox: %w", err)
	}
	return sandbox.Policy{Backend: b, AllowNetwork: f.allowNetwork, AllowGitWrites: f.allowGitWrites, PassEnv: f.passEnv}, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
