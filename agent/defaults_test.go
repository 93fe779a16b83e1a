package agent_test

import (
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/spec"
)

// The step budget when none is given is the spec's default for
// CreateRunRequest.max_steps, read here from a fresh parse of the document.
func TestDefaultMaxStepsIsTheSpecs(t *testing.T) {
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Components.Schemas["CreateRunRequest"].Value.Properties["max_steps"]
	if p == nil || p.Value.Default == nil {
		t.Fatal("CreateRunRequest.max_steps has no default in the spec")
	}
	if want := p.Value.Default.(float64); float64(agent.DefaultMaxSteps) != want {
		t.Errorf("the default step budget is %d, the spec says %v", agent.DefaultMaxSteps, want)
	}
}
