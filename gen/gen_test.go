package gen_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCodeIsFresh regenerates gen/ from spec/agent.yaml with the
// pinned generator and the checked-in configs, and spec.gen.go with
// gen/internal/specconst, into a temporary directory,
// and fails when any committed file differs: gen/ is never edited by hand
// and never stale.
func TestGeneratedCodeIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the code generator")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "oapi-codegen")
	build := exec.Command("go", "build", "-o", bin, "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the generator: %v\n%s", err, out)
	}
	specPath, err := filepath.Abs("../spec/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Reading the spec here makes `go test` key its cache on the spec's
	// content (the generator reads it in a subprocess, which the cache
	// does not see): an edited spec must rerun this test.
	if _, err := os.ReadFile(specPath); err != nil {
		t.Fatal(err)
	}
	configs, err := filepath.Glob("*.cfg.yaml")
	if err != nil || len(configs) == 0 {
		t.Fatalf("no generator configs in gen/: %v", err)
	}
	// The configs name their user templates by path, relative to gen/.
	templates, err := filepath.Glob("*.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range templates {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	generated := map[string]bool{}
	for _, cfg := range configs {
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, cfg), data, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-config", cfg, specPath)
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("generate with %s: %v\n%s", cfg, err, out)
		}
	}
	// spec.gen.go: the constants and tables of the spec (gen/internal/specconst),
	// whose source is read here for the same reason as the spec.
	if _, err := os.ReadFile("internal/specconst/main.go"); err != nil {
		t.Fatal(err)
	}
	consts := exec.Command("go", "run", "./internal/specconst", "-spec", specPath, "-o", filepath.Join(tmp, "spec.gen.go"))
	if out, err := consts.CombinedOutput(); err != nil {
		t.Fatalf("generate spec.gen.go: %v\n%s", err, out)
	}
	fresh, _ := filepath.Glob(filepath.Join(tmp, "*.gen.go"))
	for _, path := range fresh {
		name := filepath.Base(path)
		generated[name] = true
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("gen/%s is missing: run `go generate ./gen`", name)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("gen/%s is stale or was edited by hand (first difference at line %d): run `go generate ./gen`", name, firstDiffLine(got, want))
		}
	}
	committed, _ := filepath.Glob("*.gen.go")
	for _, name := range committed {
		if !generated[name] {
			t.Errorf("gen/%s is not produced by any config: delete it", name)
		}
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// TestPackageCommentIsTheProjects: only doc.go says what package gen is,
// so that `go doc ./gen` opens with the project's words rather than a
// generator's.
func TestPackageCommentIsTheProjects(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if name == "doc.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			t.Errorf("%s has a package comment (%q): gen/doc.go's is the package's", name, f.Doc.Text())
		}
	}
}
