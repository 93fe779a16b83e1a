package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCommandFreeOfKin: the specloop command links neither kin-openapi nor
// santhosh-tekuri/jsonschema, whose package initialisation compiled every
// draft's meta-schema (21,300 allocations at every start, issue 21): it
// reads the spec through gen.SpecDoc and validates with internal/schema.
// They stay for the generator and these contract tests.
func TestCommandFreeOfKin(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the command's dependencies")
	}
	out, err := exec.Command("go", "list", "-deps", "../../cmd/specloop").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for dep := range strings.Lines(string(out)) {
		if strings.Contains(dep, "kin-openapi") || strings.Contains(dep, "santhosh-tekuri") {
			t.Errorf("cmd/specloop depends on %s", strings.TrimSpace(dep))
		}
	}
}

// kinModule is the import path prefix of kin-openapi's packages.
const kinModule = "github.com/getkin/kin-openapi/"

// TestPublicAPIFreeOfKin: no exported declaration of a package a user can
// import (every package of the module but internal/ ones and the generated
// gen) names a kin-openapi type, so a kin-openapi upgrade is never a
// breaking change of specloop's API.
func TestPublicAPIFreeOfKin(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	var leaks []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") ||
				base == "testdata" || base == "internal") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		leaks = append(leaks, kinInAPI(t, path, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("walked %d Go files; the module root is wrong", files)
	}
	if len(leaks) > 0 {
		t.Errorf("kin-openapi types in specloop's public API; read the spec through gen.SpecDoc (internal/oas) instead:\n%s", strings.Join(leaks, "\n"))
	}
}

// kinInAPI lists the exported declarations of the file at path that name a
// type of a kin-openapi package.
func kinInAPI(t *testing.T, path, rel string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	kin := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(p, kinModule) {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		kin[name] = true
	}
	if len(kin) == 0 {
		return nil
	}
	var out []string
	check := func(what string, n ast.Node) {
		if n == nil || !mentions(n, kin) {
			return
		}
		out = append(out, rel+": "+what)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			check("func "+d.Name.Name, d.Type)
			if d.Recv != nil {
				check("method "+d.Name.Name, d.Recv)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						check("type "+s.Name.Name, exportedPart(s))
					}
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						check("var/const "+n.Name, s.Type)
						if s.Type == nil && i < len(s.Values) {
							check("var/const "+n.Name, s.Values[i])
						}
					}
				}
			}
		}
	}
	return out
}

// exportedPart is what of a type declaration a user sees: its type
// parameters and its type, without a struct's unexported fields.
func exportedPart(s *ast.TypeSpec) ast.Node {
	typ := s.Type
	if st, ok := typ.(*ast.StructType); ok {
		var fields []*ast.Field
		for _, f := range st.Fields.List {
			if len(f.Names) == 0 || anyExported(f.Names) {
				fields = append(fields, f)
			}
		}
		typ = &ast.StructType{Fields: &ast.FieldList{List: fields}}
	}
	return &ast.TypeSpec{Name: s.Name, TypeParams: s.TypeParams, Type: typ}
}

func anyExported(names []*ast.Ident) bool {
	for _, n := range names {
		if n.IsExported() {
			return true
		}
	}
	return false
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	typ := recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// mentions reports whether n refers to a name of one of the packages.
func mentions(n ast.Node, pkgs map[string]bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && pkgs[id.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}
