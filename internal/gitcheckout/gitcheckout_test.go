package gitcheckout_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/specloop/specloop/internal/gitcheckout"
)

// Make checks out a commit's exact bytes into a repository of its own and
// runs none of what the source repository configures: its hooks, a smudge
// filter its attributes name, an end-of-line conversion.
func TestMakeRunsNothingTheRepositoryConfigures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repo, marker := filepath.Join(dir, "repo"), filepath.Join(dir, "ran")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-c", "core.hooksPath=/dev/null", "-C", repo}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("git %v: %v: %s", args, err, out)
		}
	}
	if err := exec.Command("git", "init", "-q", repo).Run(); err != nil {
		t.Skip("no git")
	}
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\r\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("*.txt filter=evil text eol=crlf\n"), 0o644)
	git("add", "-A")
	git("commit", "-qm", "x")
	git("config", "filter.evil.smudge", "sh -c 'touch "+marker+"; cat'")
	os.WriteFile(filepath.Join(repo, ".git", "hooks", "post-checkout"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)

	ctx := context.Background()
	hash, err := gitcheckout.Resolve(ctx, repo, "HEAD")
	if err != nil || len(hash) != 40 {
		t.Fatalf("Resolve = %q, %v", hash, err)
	}
	if _, err := gitcheckout.Resolve(ctx, repo, "--output=x"); err == nil {
		t.Error("Resolve took an option for a revision")
	}
	objects, err := gitcheckout.Objects(ctx, repo)
	if err != nil || objects != filepath.Join(repo, ".git", "objects") {
		t.Fatalf("Objects = %q, %v", objects, err)
	}
	wt := filepath.Join(dir, "wt")
	if err := gitcheckout.Make(ctx, objects, hash, wt); err != nil {
		t.Fatal(err)
	}
	// The blob holds "one\ntwo\n" (git add normalized it); checked out
	// with the attributes, it would be "one\r\ntwo\r\n".
	blob, _ := exec.Command("git", "-C", repo, "cat-file", "-p", "HEAD:a.txt").Output()
	if data, _ := os.ReadFile(filepath.Join(wt, "a.txt")); string(data) != string(blob) || string(blob) != "one\ntwo\n" {
		t.Errorf("a.txt = %q, want the commit's bytes %q", data, blob)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("Make ran the repository's hook or filter")
	}
	if out, err := exec.Command("git", "-C", wt, "rev-parse", "HEAD").Output(); err != nil || string(out) != hash+"\n" {
		t.Errorf("the work tree's HEAD = %q, %v", out, err)
	}
	// Made again over what a stopped attempt left, it starts afresh.
	os.WriteFile(filepath.Join(wt, "stray"), nil, 0o644)
	if err := gitcheckout.Make(ctx, objects, hash, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wt, "stray")); err == nil {
		t.Error("Make kept a file of the directory it replaced")
	}
	// A store named through a symbolic link is named resolved, as the
	// sandbox binds it.
	os.Symlink(repo, filepath.Join(dir, "link"))
	if err := gitcheckout.Make(ctx, filepath.Join(dir, "link", ".git", "objects"), hash, wt); err != nil {
		t.Fatal(err)
	}
	if alt, _ := os.ReadFile(filepath.Join(wt, ".git", "objects", "info", "alternates")); string(alt) != objects+"\n" {
		t.Errorf("alternates = %q, want %q", alt, objects+"\n")
	}
}
