package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/specloop/specloop/tools"
)

// toolsSpecFlags is --tools-spec, shared by run and serve: OpenAPI
// documents of extra tools whose operations declare their handlers (a
// sandboxed command or an HTTP endpoint; see tools.Spec.RegisterDeclared).
type toolsSpecFlags struct {
	files stringList
}

func (f *toolsSpecFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.files, "tools-spec", "an OpenAPI document of extra tools (POST /v1/tools/{name}), each run by the command of its x-specloop-argv (under the sandbox; needs commands) or posted to its operation's servers URL (repeatable)")
}

// load reads, checks and binds every document; an error names the file.
func (f *toolsSpecFlags) load() ([]*tools.Spec, error) {
	var specs []*tools.Spec
	for _, path := range f.files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--tools-spec: %w", err)
		}
		spec, err := tools.LoadSpec(data)
		if err == nil {
			err = spec.RegisterDeclared(tools.DeclaredConfig{})
		}
		if err != nil {
			return nil, fmt.Errorf("--tools-spec %s: %w", path, err)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}
