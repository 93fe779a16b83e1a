package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/cmd/internal/readmetest"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
)

// The README and the pages of docs/ are the first things a newcomer runs:
// their examples must work as written. These tests read them at the
// repository root.

const repoRoot = "../.."

// Every Go example is a complete program that builds against the module
// through a replace line, exactly as the README tells a user to set it up;
// those that need no API key are run, the SDK's against a real server.
func TestReadmeGoExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the README's programs")
	}
	t.Parallel() // its programs have a module directory and a server of their own
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module readme.example\n\ngo 1.26\n\nrequire github.com/specloop/specloop v0.0.0\n\nreplace github.com/specloop/specloop => %s\n", root)
	write(t, filepath.Join(dir, "go.mod"), gomod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))

	type program struct {
		name string
		at   string // file:line
		src  string
	}
	var progs []program
	var fences []readmetest.Fence
	for _, doc := range readmetest.Docs(t, repoRoot) {
		fences = append(fences, readmetest.Fences(t, doc)...)
	}
	for _, f := range fences {
		if f.Lang != "go" {
			continue
		}
		if !strings.HasPrefix(f.Body, "package main\n") {
			t.Errorf("%s: a Go example must be a complete program (start it with package main) so that it runs when copied", f.At())
			continue
		}
		p := program{name: fmt.Sprintf("prog%d", len(progs)), at: f.At(), src: f.Body}
		write(t, filepath.Join(dir, p.name, "main.go"), p.src)
		progs = append(progs, p)
	}
	if len(progs) == 0 {
		t.Fatal("no Go examples found in the README")
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off")
	goCmd := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = env
		return cmd
	}
	if out, err := goCmd(t.Context(), "vet", "./...").CombinedOutput(); err != nil {
		t.Fatalf("the README's Go examples do not build (go vet):\n%s", out)
	}

	// The SDK's examples talk to the address `specloop serve` uses by
	// default; point them at one test server instead. Every program that
	// runs is built by one go command (the links share its parallelism)
	// rather than one `go run` each.
	const token = "readme-token"
	srv, err := server.New(server.Config{Token: token, Config: runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() { _ = srv.Shutdown(context.Background()); hs.Close() }()
	bin := t.TempDir()
	build := []string{"build", "-ldflags=-s -w", "-o", bin + string(filepath.Separator)}
	runs := map[string]bool{}
	for _, p := range progs {
		if strings.Contains(p.src, `"github.com/specloop/specloop/model/openai"`) ||
			strings.Contains(p.src, `"github.com/specloop/specloop/model/anthropic"`) {
			continue
		}
		if strings.Contains(p.src, `"github.com/specloop/specloop/sdk"`) {
			write(t, filepath.Join(dir, p.name, "main.go"), strings.ReplaceAll(p.src, "http://127.0.0.1:8080", hs.URL))
		}
		build = append(build, "./"+p.name)
		runs[p.name] = true
	}
	if len(runs) > 0 {
		if out, err := goCmd(t.Context(), build...).CombinedOutput(); err != nil {
			t.Fatalf("the README's Go examples do not build (go build):\n%s", out)
		}
	}

	for _, p := range progs {
		t.Run(strings.ReplaceAll(p.at, "/", "_"), func(t *testing.T) {
			if !runs[p.name] {
				t.Skipf("%s needs a provider (built, not run)", p.at)
			}
			cmd := exec.CommandContext(t.Context(), filepath.Join(bin, p.name))
			cmd.Dir = dir
			cmd.Env = env
			if strings.Contains(p.src, `"github.com/specloop/specloop/sdk"`) {
				cmd.Env = append(slices.Clip(env), "SPECLOOP_TOKEN="+token)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", p.at, err, out)
			}
			if strings.Contains(string(out), "panic:") {
				t.Fatalf("%s panicked:\n%s", p.at, out)
			}
			t.Logf("%s printed:\n%s", p.at, out)
		})
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every shell example runs as written from the repository root: specloop
// commands that need no provider are run (in a directory that mirrors the
// repository root, so files they create go elsewhere; `run --remote`
// against a server the test starts), the others must parse (all flags known, values valid) and
// name files that exist; curl commands that send a body say it is JSON and
// carry the token.
func TestReadmeShellExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sandbox := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(sandbox, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	var cmds []readmetest.Command
	for _, doc := range readmetest.Docs(t, repoRoot) {
		cmds = append(cmds, readmetest.ShellBlocks(t, doc)...)
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		// curl commands quoted inline in the text count too.
		for _, m := range regexp.MustCompile("`(curl [^`]+)`").FindAllStringSubmatchIndex(string(data), -1) {
			words, _ := readmetest.ShellWords(string(data[m[2]:m[3]]))
			cmds = append(cmds, readmetest.Command{File: doc, Line: 1 + strings.Count(string(data[:m[0]]), "\n"), Words: words})
		}
	}
	t.Chdir(sandbox)

	ran, parsed, curls := 0, 0, 0
	for _, c := range cmds {
		w := c.Words
		stdin := ""
		// `echo TEXT | specloop ...` feeds TEXT to standard input.
		if i := slices.Index(w, "|"); i > 0 && w[0] == "echo" {
			stdin = strings.Join(w[1:i], " ") + "\n"
			w = w[i+1:]
		}
		switch {
		case len(w) >= 2 && w[0] == "cat" && w[1] == ">" && c.Heredoc != "":
			write(t, filepath.Join(sandbox, w[2]), c.Heredoc)
			continue
		case len(w) >= 3 && w[0] == "go" && w[1] == "run" && w[2] == "./cmd/specloop":
			w = w[3:]
		case len(w) >= 1 && w[0] == "specloop":
			w = w[1:]
		case len(w) >= 1 && w[0] == "curl":
			curls++
			checkCurl(t, c.At(), w)
			continue
		default:
			continue // go test, exports and other tools
		}
		name := fmt.Sprintf("%s: specloop %s", c.At(), strings.Join(w, " "))
		if len(w) == 0 {
			t.Errorf("%s: no command", name)
			continue
		}
		// Files the command reads must exist.
		for i, a := range w[:len(w)-1] {
			switch a {
			case "--script", "-script", "--prompt-file", "-prompt-file", "--token-file", "-token-file":
				if _, err := os.Stat(w[i+1]); err != nil && w[i+1] != "-" {
					t.Errorf("%s: %s names %s, which does not exist from the repository root", name, a, w[i+1])
				}
			}
		}
		// A run that continues or resumes one the docs made earlier is
		// parsed only, like a run of a real model (one without --script
		// takes its model from the reader's configuration file).
		local := (w[0] == "run" && slices.Contains(w, "--script") && !slices.Contains(w, "--model") && !slices.Contains(w, "--continue") && !slices.Contains(w, "--resume")) ||
			w[0] == "trace" || w[0] == "tools" || w[0] == "spec" || w[0] == "help"
		args := w
		if i := slices.Index(w, "--remote"); local && i >= 0 && i+1 < len(w) {
			// A remote run of a script needs only a server: this test's,
			// in place of the one the README starts.
			args = slices.Clone(w)
			args[i+1] = remoteURL(t)
		}
		if !local {
			args = append(slices.Clip(w), "-h") // parses every flag, then stops before doing anything
			parsed++
		} else {
			ran++
		}
		code, stdout, stderr := cliIn(t, stdin, args...)
		if code != exitOK {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", name, code, stdout, stderr)
		}
		// What a session shows is what the command prints, durations aside.
		if local && c.Output != "" {
			if got, want := normalize(strings.TrimSpace(stdout), sandbox), normalize(c.Output, sandbox); got != want {
				t.Errorf("%s: the README shows\n%s\nbut the command printed\n%s", name, want, got)
			}
		}
	}
	t.Logf("ran %d specloop commands, parsed %d, checked %d curl commands", ran, parsed, curls)
	if ran < 4 || parsed < 5 || curls < 3 {
		t.Fatalf("found too few examples (ran %d, parsed %d, curl %d): did the README's shell blocks change form?", ran, parsed, curls)
	}
}

// remoteURL starts a specloop server for the README's remote examples,
// with the token in $SPECLOOP_TOKEN as the README sets it up.
func remoteURL(t *testing.T) string {
	t.Helper()
	const token = "readme-token"
	t.Setenv(cli.TokenEnv, token)
	srv, err := server.New(server.Config{Token: token, Config: runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()); hs.Close() })
	return hs.URL
}

// checkCurl checks what a request to the API needs: a JSON body is labelled
// as JSON, and every /v1/ request carries the bearer token.
func checkCurl(t *testing.T, at string, w []string) {
	t.Helper()
	var headers []string
	body, v1 := false, false
	for i, a := range w {
		switch {
		case (a == "-H" || a == "--header") && i+1 < len(w):
			headers = append(headers, strings.ToLower(w[i+1]))
		case a == "-d" || a == "--data" || a == "--data-raw" || a == "--json":
			body = true
		case strings.Contains(a, "/v1/"):
			v1 = true
		}
	}
	has := func(prefix string) bool {
		return slices.ContainsFunc(headers, func(h string) bool { return strings.HasPrefix(h, prefix) })
	}
	if body && !has("content-type: application/json") && !slices.Contains(w, "--json") {
		t.Errorf("%s: curl sends a body without -H 'Content-Type: application/json'", at)
	}
	if v1 && !has("authorization: bearer ") {
		t.Errorf("%s: curl calls the API without -H \"Authorization: Bearer $SPECLOOP_TOKEN\"", at)
	}
}

// Every relative link of the documents names a file that exists and, with
// a #fragment, a heading of that file (GitHub's anchors: lower case,
// punctuation dropped, spaces as -), so moving a section breaks a test, not
// a reader's link.
func TestDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile("(?m)^#{1,6} (.+)$")
	anchors := map[string]map[string]bool{} // by path from the repository root
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		if data, err := os.ReadFile(filepath.Join(repoRoot, file)); err == nil {
			inFence := false
			for _, l := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(l, "```") {
					inFence = !inFence
				}
				if m := heading.FindStringSubmatch(l); m != nil && !inFence {
					a[githubAnchor(m[1])] = true
				}
			}
		}
		anchors[file] = a
		return a
	}
	checked := 0
	for _, doc := range readmetest.Docs(t, repoRoot) {
		file, _ := filepath.Rel(repoRoot, doc)
		file = filepath.ToSlash(file)
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatchIndex(string(data), -1) {
			target := string(data[m[2]:m[3]])
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			at := fmt.Sprintf("%s:%d", file, 1+strings.Count(string(data[:m[0]]), "\n"))
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				if _, err := os.Stat(filepath.Join(repoRoot, dest)); err != nil {
					t.Errorf("%s: link to %s: no such file", at, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
				t.Errorf("%s: link to %s: %s has no heading with that anchor", at, target, dest)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d links: did the documents' link form change?", checked)
	}
}

// githubAnchor is the fragment GitHub gives a heading.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
