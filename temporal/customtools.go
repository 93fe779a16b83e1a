package temporal

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/tools"
)

// toolsRecord is the name of a run's record of its custom tools'
// documents in the store.
const toolsRecord = "tools"

// customTools returns the custom tools of run id, loaded from the
// documents of the API server that accepted it (runner.Spec.CustomTools)
// with the handlers their operations declare, as serve's --tools-spec
// loads them. The Open activity gives the run's whole spec: it records the
// documents in the store, where a worker that opens the run again (after
// a restart, for a tool call) finds them (whole nil). A tool that runs a
// command is refused on a worker started without --allow-commands, with
// an error naming the tool and the flag.
func (a *Activities) customTools(id string, whole *runner.Spec) ([]*tools.Spec, error) {
	ctx := context.Background()
	var docs []string
	switch {
	case whole != nil && len(whole.CustomTools) > 0:
		docs = whole.CustomTools
		data, err := json.Marshal(docs)
		if err == nil {
			err = a.Store.rs.PutRecord(ctx, id, toolsRecord, data)
		}
		if err != nil {
			return nil, storeError("record the custom tools", err)
		}
	case whole == nil:
		data, ok, err := a.Store.rs.Record(ctx, id, toolsRecord, -1)
		if err != nil {
			return nil, storeError("read the record of the custom tools", err)
		}
		if ok {
			if err := json.Unmarshal(data, &docs); err != nil {
				return nil, temporal.NewNonRetryableApplicationError("the record of the custom tools: "+err.Error(), "tools", nil)
			}
		}
	}
	var specs []*tools.Spec
	for i, doc := range docs {
		s, err := tools.LoadSpec([]byte(doc))
		if err == nil {
			err = s.RegisterDeclared(tools.DeclaredConfig{})
		}
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the API server's custom tools (its --tools-spec %d): %v", i+1, err), "tools", nil)
		}
		if names := s.CommandTools(); len(names) > 0 {
			what := fmt.Sprintf("the custom tool %q runs a command and was refused", names[0])
			if whole != nil {
				what += ", so the model was not asked"
			}
			if err := a.refuseCommand(what); err != nil {
				return nil, err
			}
		}
		specs = append(specs, s)
	}
	return specs, nil
}
