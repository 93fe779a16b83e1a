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
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The module's pinned generator, built here and run in tmp, where it
	// writes the config's output.
	bin := filepath.Join(tmp, "oapi-codegen")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen").CombinedOutput(); err != nil {
		t.Fatalf("build the generator: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-config", "types.cfg.yaml", "weather.yaml")
	cmd.Dir = tmp
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
