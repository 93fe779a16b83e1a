package sandbox_test

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/sandbox"
)

// userModCache is a user's module cache holding example.com/tiny v1.0.0 as
// downloaded (cache/download: its .info, .mod and .zip), not yet
// extracted.
func userModCache(t *testing.T) string {
	t.Helper()
	user := t.TempDir()
	dl := filepath.Join(user, "cache", "download", "example.com", "tiny", "@v")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dl, "list"), []byte("v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(dl, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`), 0o644)
	os.WriteFile(filepath.Join(dl, "v1.0.0.mod"), []byte("module example.com/tiny\n"), 0o644)
	f, err := os.Create(filepath.Join(dl, "v1.0.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, body := range map[string]string{"go.mod": "module example.com/tiny\n", "tiny.go": "package tiny\n\nconst N = 1\n"} {
		w, err := z.Create("example.com/tiny@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return user
}

// A command with the network downloads modules into the sandbox's own
// module cache, taking what the user's cache has from it, and leaves the
// user's cache as it was; without the network the user's cache is all
// it has, read-only.
func TestGoModCacheReadThrough(t *testing.T) {
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			own, user := t.TempDir(), userModCache(t)
			t.Cleanup(sandbox.UseGoModCaches(own, user))
			before := snapshot(t, user)
			dir := goModule(t, "1")
			// No checksum database: the test's module is its own.
			get := `GOSUMDB=off GOFLAGS=-mod=mod go mod download -json example.com/tiny@v1.0.0 2>&1`
			r := runPolicy(t, sandbox.Policy{Backend: b, AllowNetwork: true}, dir, get, time.Minute)
			if r.res.ExitCode != 0 || !strings.Contains(r.stdout, filepath.Join(own, "example.com", "tiny@v1.0.0")) {
				t.Fatalf("with the network: %+v", r)
			}
			if _, err := os.Stat(filepath.Join(own, "example.com", "tiny@v1.0.0", "tiny.go")); err != nil {
				t.Fatalf("the module is not in the sandbox's own cache: %v", err)
			}
			r = runPolicy(t, sandbox.Policy{Backend: b}, dir, get, time.Minute)
			if r.res.ExitCode == 0 {
				t.Fatalf("without the network the user's cache took a module extracted into it: %+v", r)
			}
			if after := snapshot(t, user); !equalMaps(before, after) {
				t.Fatal("the user's module cache changed")
			}
		})
	}
}
