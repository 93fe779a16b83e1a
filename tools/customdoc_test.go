package tools_test

import (
	"slices"
	"testing"

	"github.com/specloop/specloop/tools"
)

// A spec's document goes on as data (a Temporal worker loads the API
// server's again), and CommandTools names the tools that need commands
// once their handlers are bound: a command's, not an endpoint's.
func TestSpecDocumentAndCommandTools(t *testing.T) {
	t.Parallel()
	doc := toolDoc("echo", "      x-specloop-argv: [cat]\n", "")
	s, err := tools.LoadSpec([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Document()) != doc {
		t.Fatalf("Document() = %q, not the document loaded", s.Document())
	}
	if got := s.CommandTools(); len(got) != 0 {
		t.Fatalf("CommandTools() before binding = %v, want none", got)
	}
	if err := s.RegisterDeclared(tools.DeclaredConfig{}); err != nil {
		t.Fatal(err)
	}
	if got := s.CommandTools(); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("CommandTools() = %v, want [echo]", got)
	}
	again, err := tools.LoadSpec(s.Document())
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Tools()) != 1 || again.Tools()[0].Spec.Name != "echo" {
		t.Fatalf("the document loaded again has the tools %v", again.Tools())
	}
	web, err := tools.LoadSpec([]byte(toolDoc("echo", "      servers: [{url: \"http://127.0.0.1:1\"}]\n", "")))
	if err == nil {
		err = web.RegisterDeclared(tools.DeclaredConfig{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := web.CommandTools(); len(got) != 0 {
		t.Fatalf("an endpoint's CommandTools() = %v, want none", got)
	}
}
