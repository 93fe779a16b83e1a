package gitcheckout_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/specloop/specloop/internal/gitcheckout"
)

// objectDir makes an empty git object directory at p (it holds pack/).
func objectDir(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(p, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func alternatesOf(t *testing.T, ws string) []string {
	t.Helper()
	r, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return gitcheckout.Alternates(r, ws)
}

func writeAlternates(t *testing.T, objects, text string) {
	t.Helper()
	os.MkdirAll(filepath.Join(objects, "info"), 0o755)
	if err := os.WriteFile(filepath.Join(objects, "info", "alternates"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Alternates reads what git reads: absolute and relative lines, quoted
// ones, comments; resolves symbolic links; goes one level into the
// borrowed directories' own alternates; and leaves out what is no object
// directory, what lies inside the workspace and what git could not use.
func TestAlternates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	objects := objectDir(t, filepath.Join(ws, ".git", "objects"))
	a := objectDir(t, filepath.Join(dir, "a", "objects"))
	b := objectDir(t, filepath.Join(dir, "b c", "objects"))
	nested := objectDir(t, filepath.Join(dir, "nested", "objects"))
	deeper := objectDir(t, filepath.Join(dir, "deeper", "objects"))
	linked := objectDir(t, filepath.Join(dir, "linked", "objects"))
	os.Symlink(filepath.Join(dir, "linked"), filepath.Join(dir, "link"))
	noPack := filepath.Join(dir, "etc")
	os.MkdirAll(noPack, 0o755)
	inWS := objectDir(t, filepath.Join(ws, "vendor", "objects"))
	writeAlternates(t, objects, "# a comment\n\n"+a+"\n"+
		"../../../b c/objects\r\n"+
		`"`+filepath.Join(dir, "link", "objects")+`"`+"\n"+
		noPack+"\n"+inWS+"\n"+filepath.Join(dir, "missing")+"\n/\n")
	writeAlternates(t, a, "../../nested/objects\n")
	writeAlternates(t, nested, deeper+"\n")
	want := []string{a, nested, b, linked}
	if got := alternatesOf(t, ws); !slices.Equal(got, want) {
		t.Fatalf("Alternates = %q, want %q", got, want)
	}
}

func TestAlternatesNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got := alternatesOf(t, dir); got != nil {
		t.Errorf("no .git: %q", got)
	}
	objectDir(t, filepath.Join(dir, ".git", "objects"))
	if got := alternatesOf(t, dir); got != nil {
		t.Errorf("no alternates file: %q", got)
	}
	// A .git that is a symbolic link is not the run's own repository.
	ws := t.TempDir()
	other := filepath.Join(ws, "other")
	objects := objectDir(t, filepath.Join(other, ".git", "objects"))
	writeAlternates(t, objects, objectDir(t, filepath.Join(t.TempDir(), "objects"))+"\n")
	if got := alternatesOf(t, other); len(got) != 1 {
		t.Fatalf("control: %q", got)
	}
	os.Symlink("other/.git", filepath.Join(ws, ".git")) // a link os.Root follows
	if got := alternatesOf(t, ws); got != nil {
		t.Errorf(".git a symbolic link: %q", got)
	}
}

// At most MaxAlternates directories.
func TestAlternatesCapped(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	objects := objectDir(t, filepath.Join(ws, ".git", "objects"))
	text := ""
	for range gitcheckout.MaxAlternates + 3 {
		text += objectDir(t, filepath.Join(t.TempDir(), "objects")) + "\n"
	}
	writeAlternates(t, objects, text)
	if got := alternatesOf(t, ws); len(got) != gitcheckout.MaxAlternates {
		t.Errorf("%d directories, want %d", len(got), gitcheckout.MaxAlternates)
	}
}

// An alternates file reached through a symbolic link (the file, or a
// directory on its way) is not read: its text could be a work tree file's,
// which the model writes.
func TestAlternatesNoLinks(t *testing.T) {
	t.Parallel()
	store := objectDir(t, filepath.Join(t.TempDir(), "objects"))
	for _, link := range []string{"alternates", "info", "objects"} {
		t.Run(link, func(t *testing.T) {
			ws := t.TempDir()
			objects := objectDir(t, filepath.Join(ws, ".git", "objects"))
			writeAlternates(t, objects, store+"\n")
			if got := alternatesOf(t, ws); len(got) != 1 {
				t.Fatalf("control: %q", got)
			}
			p := map[string]string{"alternates": filepath.Join(objects, "info", "alternates"), "info": filepath.Join(objects, "info"), "objects": objects}[link]
			moved := filepath.Join(ws, "moved")
			if err := os.Rename(p, moved); err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(filepath.Dir(p), moved) // a link os.Root follows
			if err := os.Symlink(rel, p); err != nil {
				t.Fatal(err)
			}
			if got := alternatesOf(t, ws); got != nil {
				t.Errorf("read through a link at %s: %q", link, got)
			}
		})
	}
}
