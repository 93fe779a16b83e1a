package server

import (
	"testing"

	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/spec"
)

// The page size of listRuns without a limit is the spec's default for the
// parameter, read here from a fresh parse of the document.
func TestDefaultPageSizeIsTheSpecs(t *testing.T) {
	t.Parallel()
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Paths.Find("/v1/runs").Get.Parameters.GetByInAndName("query", "limit")
	if p == nil || p.Schema.Value.Default == nil {
		t.Fatal("listRuns has no limit parameter with a default")
	}
	if want := p.Schema.Value.Default.(float64); float64(defaultPageSize) != want {
		t.Errorf("listRuns pages %d runs by default, the spec says %v", defaultPageSize, want)
	}
}
