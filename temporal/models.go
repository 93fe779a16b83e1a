package temporal

import (
	"errors"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// hasModels reports whether the worker builds models.
func (a *Activities) hasModels() bool { return a.SystemModels != nil || a.Models != nil }

// modelFor builds a run's model of configuration cfg with system, the
// system prompt its spec carries.
func (a *Activities) modelFor(system string, cfg gen.ModelConfig) (agent.Model, error) {
	if a.SystemModels != nil {
		return a.SystemModels(system)(cfg)
	}
	if system != "" {
		return nil, errors.New("this worker builds models without a system prompt, and the run has one (the API server's --system-file)")
	}
	return a.Models(cfg)
}
