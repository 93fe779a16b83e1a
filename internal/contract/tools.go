package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/tools"
)

// callTimeout bounds one generated tool call, so that a hanging handler
// fails the check instead of the test binary.
const callTimeout = 20 * time.Second

// CheckTools checks the tools of doc against handlers, the way a model
// would meet them:
//
//   - the tools of the spec and the handlers pair up one to one;
//   - each handler's Go input type has a field for every property of the
//     tool's input schema and no other (a spec field the handler cannot see
//     is ignored silently);
//   - each tool's operation lists its error codes (x-error-codes; the
//     registry refuses a tool without them or with a code ErrorCode lacks);
//   - the model-visible tool specs validate against ToolSpec;
//   - every input GenerateInputs derives from the input schema and the
//     spec's examples is run by a runtime over doc with these handlers
//     (commands allowed), in the fixture workspace (see WriteFixture), and
//     its Observation must match the spec: an input the schema accepts gets
//     a result that validates against the tool's result schema, or an error
//     whose code the tool's operation lists (or a runtime code); an input the schema
//     rejects gets invalid_arguments; every example succeeds.
//
// Validity is decided by kin-openapi over doc, independently of the
// runtime's own validator. dir is an empty directory the check owns; it
// holds the fixture, restored after every call that changed it.
func CheckTools(ctx context.Context, doc *openapi3.T, handlers []tools.Handler, dir string) []Problem {
	// The tools package takes a document, not kin-openapi's parsed form:
	// hand it doc as JSON (with whatever edits a test made to it).
	docJSON, err := doc.MarshalJSON()
	if err != nil {
		return []Problem{{Subject: "spec", Message: "the spec does not encode: " + err.Error()}}
	}
	reg, err := tools.NewRegistry(docJSON)
	if err != nil {
		return []Problem{{Subject: "spec", Message: "the tools cannot be derived from the spec: " + err.Error()}}
	}
	bound, ps := bind(reg, handlers)
	if len(ps) > 0 {
		// The runtime refuses to start (tools.New fails), so no call runs.
		return ps
	}
	for _, def := range reg.Defs() {
		ps = append(ps, checkInputType(doc, def, bound[def.Spec.Name])...)
	}
	if err := WriteFixture(dir); err != nil {
		return append(ps, Problem{Subject: "fixture", Message: err.Error()})
	}
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		return append(ps, Problem{Subject: "fixture", Message: err.Error()})
	}
	defer ws.Close()
	rt, err := tools.New(tools.Config{Spec: docJSON, Handlers: handlers, Workspace: ws})
	if err != nil {
		return append(ps, Problem{Subject: "runtime", Message: "the runtime does not start: " + err.Error()})
	}
	ps = append(ps, CheckToolSpecs(doc, rt.Specs())...)
	offered := map[string]bool{}
	for _, s := range rt.Specs() {
		offered[s.Name] = true
	}
	obsSchema, err := component(doc, componentName[gen.Observation]())
	if err != nil {
		return append(ps, Problem{Subject: "spec", Message: err.Error()})
	}
	tc := &toolCheck{rt: rt, dir: dir, observation: obsSchema}
	for _, def := range reg.Defs() {
		if !offered[def.Spec.Name] {
			ps = append(ps, Problem{Subject: def.Spec.Name, Message: "the runtime does not offer the tool even with a workspace and commands allowed"})
			continue
		}
		ps = append(ps, tc.check(ctx, doc, def)...)
	}
	return dedupe(ps)
}

// bind pairs tools and handlers as tools.Bind does, but reports each tool
// and each handler on its own.
func bind(reg *tools.Registry, handlers []tools.Handler) (map[string]tools.Handler, []Problem) {
	var ps []Problem
	byInput := map[string]tools.Handler{}
	for _, h := range handlers {
		name := tools.InputName(h)
		if _, dup := byInput[name]; dup {
			ps = append(ps, Problem{Subject: "handlers", Message: fmt.Sprintf("two handlers take %s", name)})
		}
		byInput[name] = h
	}
	bound := map[string]tools.Handler{}
	for _, def := range reg.Defs() {
		h, ok := byInput[def.InputSchemaName]
		if !ok {
			ps = append(ps, Problem{Subject: def.Spec.Name, Message: fmt.Sprintf("the spec defines this tool but no handler implements it (no handler takes %s, its input schema)", def.InputSchemaName)})
			continue
		}
		bound[def.Spec.Name] = h
		delete(byInput, def.InputSchemaName)
	}
	for _, name := range slices.Sorted(maps.Keys(byInput)) {
		ps = append(ps, Problem{Subject: "handler of " + name, Message: "no tool of the spec has this input schema: the handler implements a tool the spec does not define"})
	}
	return bound, ps
}

// toolCheck runs generated inputs through one runtime.
type toolCheck struct {
	rt          *tools.Runtime
	dir         string
	observation *openapi3.Schema
}

// check runs every generated input of one tool.
func (tc *toolCheck) check(ctx context.Context, doc *openapi3.T, def *tools.Def) []Problem {
	name := def.Spec.Name
	op := operationByID(doc, name)
	if op == nil {
		return []Problem{{Subject: name, Message: "no operation has this tool's name as operationId"}}
	}
	examples, err := examplesOf(op)
	if err != nil {
		return []Problem{{Subject: name, Message: err.Error()}}
	}
	var ps []Problem
	if len(examples) == 0 {
		ps = append(ps, Problem{Subject: name, Message: "the operation has no request body example; every tool needs one (it is the base of the generated inputs)"})
	}
	result := resultName(op)
	input, output := toolSchemas(doc, op, def)
	if input == nil || output == nil {
		return append(ps, Problem{Subject: name, Message: "the input or result schema is missing from the spec"})
	}
	for _, in := range GenerateInputs(input, examples) {
		p := Problem{Subject: name, Context: "from example " + in.Example}
		p.Field, p.Value = in.describe()
		if in.Verbatim {
			p.Context = ""
		}
		invalid := kinCheck(input, in.Args, openapi3.VisitAsRequest())
		if in.Verbatim && invalid != nil {
			p.Field = invalid.Pointer
			p.Message = fmt.Sprintf("example %s does not validate against the input schema %s: %s", in.Example, def.InputSchemaName, invalid.Reason)
			ps = append(ps, p)
			continue
		}
		obs, err := tc.call(ctx, name, in.Args)
		if err != nil {
			p.Message = err.Error()
			ps = append(ps, p)
			continue
		}
		for _, msg := range judge(def, output, result, tc.observation, obs, invalid, in.Verbatim) {
			q := p
			if in.Verbatim {
				msg = "example " + in.Example + ": " + msg
			}
			q.Message = msg
			ps = append(ps, q)
		}
	}
	return ps
}

// call runs one tool call in the fixture and restores the fixture.
func (tc *toolCheck) call(ctx context.Context, tool string, args map[string]any) (gen.Observation, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	obs, err := tc.rt.Call(ctx, &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: tool, Arguments: args})
	if rerr := resetFixture(tc.dir); rerr != nil {
		return obs, rerr
	}
	if err != nil {
		return obs, fmt.Errorf("the handler failed internally (a run would stop with internal_error): %v", err)
	}
	return obs, nil
}

// judge says what is wrong with an observation of an input that the schema
// accepts (invalid == nil) or rejects.
func judge(def *tools.Def, output *openapi3.Schema, result string, obsSchema *openapi3.Schema, obs gen.Observation, invalid *fieldError, example bool) []string {
	var msgs []string
	if data, err := json.Marshal(obs); err != nil {
		msgs = append(msgs, "the observation does not encode: "+err.Error())
	} else {
		var v any
		_ = json.Unmarshal(data, &v)
		if fe := kinCheck(obsSchema, v, openapi3.VisitAsResponse()); fe != nil {
			msgs = append(msgs, "the observation does not validate against Observation: "+fe.Error())
		}
	}
	var code gen.ErrorCode
	if obs.ErrorCode != nil {
		code = *obs.ErrorCode
	}
	detail := textclip.Clip(strings.TrimPrefix(obs.Content, "error: "), 200)
	if invalid != nil {
		if !obs.IsError || code != gen.ErrorCodeInvalidArguments {
			what := "succeeded"
			if obs.IsError {
				what = "failed with " + quoteCode(code)
			}
			msgs = append(msgs, fmt.Sprintf("the schema rejects this input (%s) but the runtime did not answer %s: the call %s", invalid.Error(), gen.ErrorCodeInvalidArguments, what))
		}
		return msgs
	}
	if obs.IsError {
		switch {
		case code == gen.ErrorCodeInvalidArguments:
			msgs = append(msgs, fmt.Sprintf("the schema accepts this input but the runtime answered %s: %s", code, detail))
		case !def.Declares(code):
			msgs = append(msgs, fmt.Sprintf("handler failed with %s, which the operation's x-error-codes do not list (it lists %s): %s", quoteCode(code), joinCodes(def.ErrorCodes), detail))
		case example:
			msgs = append(msgs, fmt.Sprintf("failed with %s; a spec example must succeed: %s", code, detail))
		}
		if obs.Data != nil {
			msgs = append(msgs, "an error observation carries data; the spec says data is absent for errors")
		}
		return msgs
	}
	if obs.Data == nil {
		return append(msgs, "the call succeeded without a structured result (Observation data)")
	}
	if err := def.ValidateResult(*obs.Data); err != nil {
		msgs = append(msgs, fmt.Sprintf("the result does not validate against %s (runtime validator): %v", result, err))
	} else if fe := kinCheck(output, normalize(*obs.Data), openapi3.VisitAsResponse()); fe != nil {
		msgs = append(msgs, fmt.Sprintf("the result does not validate against %s (kin-openapi): %v", result, fe))
	}
	return msgs
}

// toolSchemas returns the input and result schemas of the tool def, the
// operation op of doc; nil when doc lacks them.
func toolSchemas(doc *openapi3.T, op *openapi3.Operation, def *tools.Def) (input, output *openapi3.Schema) {
	if ref := doc.Components.Schemas[def.InputSchemaName]; ref != nil {
		input = ref.Value
	}
	if r := op.Responses.Status(200); r != nil && r.Value != nil {
		if mt := r.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			output = mt.Schema.Value
		}
	}
	return input, output
}

// resultName is the name of the schema of the operation's 200 response.
func resultName(op *openapi3.Operation) string {
	if r := op.Responses.Status(200); r != nil && r.Value != nil {
		if mt := r.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && mt.Schema.Ref != "" {
			return mt.Schema.Ref[strings.LastIndexByte(mt.Schema.Ref, '/')+1:]
		}
	}
	return "the tool's result schema"
}

func quoteCode(code gen.ErrorCode) string {
	if code == "" {
		return "no error code"
	}
	return string(code)
}

func joinCodes(codes []gen.ErrorCode) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// checkInputType compares the properties of a tool's input schema with the
// JSON fields of its handler's Go input type. A spec property the type
// lacks is silently dropped before the handler sees it.
func checkInputType(doc *openapi3.T, def *tools.Def, h tools.Handler) []Problem {
	t := tools.InputType(h)
	ref := doc.Components.Schemas[def.InputSchemaName]
	if t == nil || ref == nil || ref.Value == nil {
		return nil
	}
	input := ref.Value
	fields := jsonFields(t)
	var ps []Problem
	for _, prop := range slices.Sorted(maps.Keys(input.Properties)) {
		if !fields[prop] {
			ps = append(ps, Problem{Subject: def.Spec.Name, Field: pointer(prop), Message: fmt.Sprintf("the input schema declares this field but the handler's input type %s has none, so the handler never sees it (regenerate gen/ and implement it)", t)})
		}
	}
	declared := map[string]bool{}
	for prop := range input.Properties {
		declared[prop] = true
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if !declared[f] {
			ps = append(ps, Problem{Subject: def.Spec.Name, Field: pointer(f), Message: fmt.Sprintf("the handler's input type %s has this field but the input schema does not declare it", t)})
		}
	}
	return ps
}

// jsonFields lists the JSON names of a struct's fields. schema.Bind matches
// names exactly (encoding/json/v2 semantics), so the comparison does too.
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out[name] = true
	}
	return out
}

// operationByID returns the operation with the given operationId.
func operationByID(doc *openapi3.T, id string) *openapi3.Operation {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == id {
				return op
			}
		}
	}
	return nil
}
