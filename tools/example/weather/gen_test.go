package weather_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/specloop/specloop/tools/example/weather"
)

// TestGeneratedTypesAreFresh regenerates weather.gen.go from weather.yaml
// with the pinned generator into a temporary directory and fails when the
// committed file differs: the example's types are never edited by hand.
func TestGeneratedTypesAreFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the code generator")
	}
	tmp := t.TempDir()
	for _, name := range []string{"types.cfg.yaml", "weather.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "types.cfg.yaml" {
			// The generator runs here, in the module (go run resolves
			// the pinned version and keeps its executable in the build
			// cache, so it is linked once, not on every run); the copy of
			// the configuration writes the output into tmp instead.
			const output = "\noutput: weather.gen.go\n"
			if !bytes.Contains(data, []byte(output)) {
				t.Fatalf("types.cfg.yaml no longer has the line %q this test redirects; update the test", output[1:])
			}
			data = bytes.Replace(data, []byte(output), []byte("\noutput: "+filepath.Join(tmp, "weather.gen.go")+"\n"), 1)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen",
		"-config", filepath.Join(tmp, "types.cfg.yaml"), filepath.Join(tmp, "weather.yaml"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate: %v\n%s", err, out)
	}
	want, err := os.ReadFile(filepath.Join(tmp, "weather.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("weather.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("weather.gen.go is stale or was edited by hand: run `go generate ./tools/example/weather`")
	}
}

// The embedded document is the file the types are generated from.
func TestSpecIsTheFile(t *testing.T) {
	data, err := os.ReadFile("weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, weather.Spec) {
		t.Error("weather.Spec differs from weather.yaml")
	}
}
