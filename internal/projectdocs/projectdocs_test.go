package projectdocs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/internal/projectdocs"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repo/.git, repo/AGENTS.md, repo/svc/AGENTS.md and AGENTS.override.md,
// repo/svc/api (the workspace) with its own AGENTS.md; the user's file.
func tree(t *testing.T) (user, ws string) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, "AGENTS.md"), "root rules\n")
	write(t, filepath.Join(repo, "svc", "AGENTS.md"), "svc rules, overridden\n")
	write(t, filepath.Join(repo, "svc", "AGENTS.override.md"), "svc override\n")
	write(t, filepath.Join(repo, "svc", "api", "AGENTS.md"), "api rules\n")
	user = filepath.Join(dir, "config", "AGENTS.md")
	write(t, user, "user rules\n")
	return user, filepath.Join(repo, "svc", "api")
}

func paths(d projectdocs.Docs) []string {
	var out []string
	for _, f := range d.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestFromTheUserAndTheRepositoryRootDown(t *testing.T) {
	user, ws := tree(t)
	d, err := projectdocs.Load(user, ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{user, "AGENTS.md", "svc/AGENTS.override.md", "svc/api/AGENTS.md"}
	if got := paths(d); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("files %q, want %q", got, want)
	}
	order := []string{"user rules", "root rules", "svc override", "api rules"}
	last := -1
	for _, s := range order {
		i := strings.Index(d.Text, s)
		if i <= last {
			t.Fatalf("%q missing or out of order in\n%s", s, d.Text)
		}
		last = i
	}
	if strings.Contains(d.Text, "overridden") {
		t.Errorf("the override did not replace the directory's AGENTS.md:\n%s", d.Text)
	}
	if !strings.Contains(d.Text, "# Instructions from svc/api/AGENTS.md\n\napi rules") {
		t.Errorf("a file is not named above its text:\n%s", d.Text)
	}
	for _, f := range d.Files {
		if f.Size == 0 || len(f.SHA256) != 64 || f.Cut {
			t.Errorf("%s: size %d, sha256 %q, cut %v", f.Path, f.Size, f.SHA256, f.Cut)
		}
	}
}

func TestTheCapCutsTheFarthestFirst(t *testing.T) {
	user, ws := tree(t)
	all, _ := projectdocs.Load(user, ws, 0)
	// Room for the two nearest files only.
	nearest := len("# Instructions from svc/api/AGENTS.md\n\napi rules\n\n") + len("# Instructions from svc/AGENTS.override.md\n\nsvc override\n\n")
	d, err := projectdocs.Load(user, ws, nearest)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Text) > nearest || len(d.Text) >= len(all.Text) {
		t.Fatalf("%d bytes under a limit of %d", len(d.Text), nearest)
	}
	for _, f := range d.Files {
		far := f.Path == user || f.Path == "AGENTS.md"
		if f.Cut != far {
			t.Errorf("%s: cut %v, want %v", f.Path, f.Cut, far)
		}
	}
	if !strings.Contains(d.Text, "api rules") || strings.Contains(d.Text, "root rules") {
		t.Fatalf("kept the wrong files:\n%s", d.Text)
	}
	tiny, _ := projectdocs.Load("", ws, 20) // the nearest alone is over: its beginning
	if len(tiny.Text) > 20 || !tiny.Files[len(tiny.Files)-1].Cut || !strings.HasPrefix(tiny.Text, "# Instructions") {
		t.Fatalf("a limit below the nearest file: %q", tiny.Text)
	}
}

func TestASymlinkOutOfTheRepositoryIsNotRead(t *testing.T) {
	_, ws := tree(t)
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "a secret outside the repository\n")
	target := filepath.Join(ws, "AGENTS.md")
	os.Remove(target)
	if err := os.Symlink(secret, target); err != nil {
		t.Skip(err)
	}
	d, err := projectdocs.Load("", ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.Text, "secret") {
		t.Fatalf("read a file outside the repository through a symbolic link:\n%s", d.Text)
	}
	f := d.Files[len(d.Files)-1]
	if f.Path != "svc/api/AGENTS.md" || f.Refused == "" {
		t.Fatalf("the refused file is not reported: %+v", f)
	}
}

func TestOutsideARepositoryOnlyTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "AGENTS.md"), "above, not a repository\n")
	ws := filepath.Join(dir, "ws")
	write(t, filepath.Join(ws, "AGENTS.md"), "workspace rules\n")
	d, err := projectdocs.Load("", ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(d); len(got) != 1 || got[0] != "AGENTS.md" || strings.Contains(d.Text, "above") {
		t.Fatalf("files %q, text %q", got, d.Text)
	}
}

// LoadWorkspace, for a host that confines a run to its workspace, reads
// the user's file and the workspace's own, none of the repository's above.
func TestLoadWorkspaceReadsNothingAbove(t *testing.T) {
	user, ws := tree(t)
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	d, err := projectdocs.LoadWorkspace(user, root, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(d), []string{user, "AGENTS.md"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("files %q, want %q", got, want)
	}
	if strings.Contains(d.Text, "root rules") || strings.Contains(d.Text, "svc") || !strings.Contains(d.Text, "api rules") {
		t.Fatalf("text %q, want the workspace's rules only beside the user's", d.Text)
	}
}

// The user's file under the home directory is named ~/..., so the trace
// that records it does not name the user.
func TestTheUsersFileIsNamedFromHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	user := filepath.Join(home, ".config", "specloop", "AGENTS.md")
	write(t, user, "user rules\n")
	d, err := projectdocs.Load(user, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(d); len(got) != 1 || got[0] != "~/.config/specloop/AGENTS.md" {
		t.Fatalf("files %q, want ~/.config/specloop/AGENTS.md", got)
	}
}

// FuzzLoad: whatever the repository's files hold (they are untrusted
// workspace files), the text stays within the limit, every file is listed
// with its size, and a file cut or left out says so.
func FuzzLoad(f *testing.F) {
	f.Add("root rules\n", "api rules\n", 1024)
	f.Add(strings.Repeat("é", 700), "\x00\xff not UTF-8", 1100)
	f.Add("", strings.Repeat("x\n", 4000), 2048)
	f.Fuzz(func(t *testing.T, root, api string, limit int) {
		limit = 1024 + int(uint(limit)%(64<<10))
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(dir, "AGENTS.md"), root)
		write(t, filepath.Join(dir, "api", "AGENTS.md"), api)
		d, err := projectdocs.Load("", filepath.Join(dir, "api"), limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Text) > limit {
			t.Fatalf("text of %d bytes over the limit %d", len(d.Text), limit)
		}
		if len(d.Files) != 2 || d.Files[0].Size != len(root) || d.Files[1].Size != len(api) {
			t.Fatalf("files %+v, want both with their sizes", d.Files)
		}
		for i, text := range []string{root, api} {
			if whole := strings.Contains(d.Text, strings.TrimRight(text, "\n")); !whole && !d.Files[i].Cut {
				t.Fatalf("%s is not in the text whole and not marked cut", d.Files[i].Path)
			}
		}
	})
}
