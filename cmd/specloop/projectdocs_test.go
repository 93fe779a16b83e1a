package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
)

// A run in a repository's subdirectory sends the user's AGENTS.md, the
// root's and the subdirectory's to the model, in that order and before
// the task; prints which files it read; and records them in run_started
// by path, size and hash, never their text. --no-project-docs, or the
// repository's own configuration, turns them off.
func TestRunReadsAgentsMD(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	config := t.TempDir()
	t.Setenv(cli.ConfigHomeEnv, config)
	repo := t.TempDir()
	ws := filepath.Join(repo, "svc")
	files := map[string]string{
		filepath.Join(config, "specloop", "AGENTS.md"): "Answer in English.\n",
		filepath.Join(repo, ".git", "HEAD"):            "ref: refs/heads/main\n",
		filepath.Join(repo, "AGENTS.md"):               "Run gofmt before you finish.\n",
		filepath.Join(ws, "AGENTS.md"):                 "The service's tests need no network.\n",
	}
	for path, text := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	finish := []string{"", "finish", `{"answer":"84"}`}
	url, bodies := chatServer(t, finish, finish, finish)
	tracePath := filepath.Join(t.TempDir(), "trace.jsonl")
	code, stdout, stderr := specloop(t, "run", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--workspace", ws, "--trace", tracePath, "Compute 12 x 7.")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	user := filepath.Join(config, "specloop", "AGENTS.md")
	if want := "instructions from " + user + " (19 bytes), AGENTS.md (29 bytes), svc/AGENTS.md (37 bytes)\n"; !strings.Contains(stdout, want) {
		t.Errorf("the run did not print %q:\n%s", want, stdout)
	}
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.Unmarshal([]byte(bodies()[0]), &req); err != nil || len(req.Messages) < 3 {
		t.Fatalf("request %v: %s", err, bodies()[0])
	}
	in, task := req.Messages[1].Content, req.Messages[2]
	last := -1
	for _, text := range []string{"Answer in English.", "# Instructions from AGENTS.md", "Run gofmt", "# Instructions from svc/AGENTS.md", "need no network"} {
		i := strings.Index(in, text)
		if i <= last {
			t.Fatalf("the instructions lack %q or have it out of order:\n%s", text, in)
		}
		last = i
	}
	if task.Role != "user" || task.Content != "Compute 12 x 7." {
		t.Errorf("the message after the instructions is %+v, want the task", task)
	}

	trace, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(trace), "gofmt") || strings.Contains(string(trace), "network") {
		t.Errorf("the trace holds the instructions' text:\n%s", trace)
	}
	var started gen.TraceEvent
	if err := json.Unmarshal(trace[:strings.IndexByte(string(trace), '\n')], &started); err != nil || started.ProjectDocs == nil {
		t.Fatalf("run_started %+v (%v), want its project docs", started, err)
	}
	var got []string
	for _, d := range *started.ProjectDocs {
		got = append(got, d.Path)
		text := files[filepath.Join(repo, filepath.FromSlash(d.Path))]
		if d.Path == user {
			text = files[user]
		}
		if sum := sha256.Sum256([]byte(text)); d.Sha256 != hex.EncodeToString(sum[:]) || d.Size != len(text) {
			t.Errorf("%s: size %d sha256 %s, want the file's %d bytes", d.Path, d.Size, d.Sha256, len(text))
		}
	}
	if want := []string{user, "AGENTS.md", "svc/AGENTS.md"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("run_started's project docs %q, want %q", got, want)
	}

	// Off by the flag, then by the repository's configuration.
	code, stdout, stderr = specloop(t, "run", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--workspace", ws, "--no-project-docs", "Compute 12 x 7.")
	if code != exitOK || strings.Contains(stdout, "instructions from") || strings.Contains(bodies()[1], "gofmt") {
		t.Errorf("--no-project-docs: exit %d, the model got the instructions or the run printed them\n%s%s", code, stdout, stderr)
	}
	if err := os.MkdirAll(filepath.Join(repo, ".specloop"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".specloop", "config.toml"), []byte("no_project_docs = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = specloop(t, "run", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--workspace", ws, "Compute 12 x 7.")
	if code != exitOK || strings.Contains(bodies()[2], "gofmt") || strings.Contains(stderr, "warning") {
		t.Errorf("no_project_docs in the repository's file: exit %d, the model got the instructions or the key was refused\n%s%s", code, stdout, stderr)
	}
}
