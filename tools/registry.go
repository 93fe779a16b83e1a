package tools

import (
	"fmt"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/internal/schema"
)

// toolPathPrefix is where the spec keeps tools: every tool is POST {prefix}{name}.
const toolPathPrefix = "/v1/tools/"

// Def is one tool as the spec defines it: its model-visible spec, the name of
// its input schema component (which binds it to a Go handler) and the
// validators of its input and result.
type Def struct {
	// Spec is what the model is told about the tool.
	Spec gen.ToolSpec
	// InputSchemaName is the component name of the input schema, e.g.
	// "CalculatorInput"; handlers are bound to tools through it.
	InputSchemaName string
	// ErrorCodes are the codes the tool's operation lists (x-error-codes of
	// its 422 response); the runtime's codes may answer any call besides.
	ErrorCodes []gen.ErrorCode

	op     *oas.Operation // its extensions and servers declare a handler
	input  *schema.Validator
	result *schema.Validator
}

// ValidateInput checks arguments against the tool's input schema; a string
// that is not UTF-8 (a Go caller's, JSON cannot carry one) is refused too.
func (d *Def) ValidateInput(args map[string]any) error {
	if err := d.input.Validate(args); err != nil {
		return err
	}
	return schema.CheckUTF8(args)
}

// ValidateResult checks a structured result against the tool's result schema.
func (d *Def) ValidateResult(data map[string]any) error { return d.result.Validate(data) }

// Registry is the set of tools an OpenAPI document defines, sorted by name.
type Registry struct {
	defs   []*Def
	byName map[string]*Def
}

// NewRegistry derives every tool from the operations POST /v1/tools/NAME
// of the OpenAPI document doc (YAML or JSON), NAME a tool name (the
// templated POST /v1/tools/{name}, which serves every tool over HTTP,
// defines none). The operationId must equal the name in the path; the
// request body and the 200 response must be JSON schemas given by $ref.
func NewRegistry(doc []byte) (*Registry, error) {
	d, err := oas.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("tools: spec: %w", err)
	}
	return newRegistry(d)
}

func newRegistry(doc *oas.Doc) (*Registry, error) {
	r := &Registry{byName: map[string]*Def{}}
	for _, p := range doc.Paths {
		name, ok := strings.CutPrefix(p.Path, toolPathPrefix)
		if !ok || !ValidToolName(name) {
			continue
		}
		def, err := newDef(name, p.Operations["POST"])
		if err != nil {
			return nil, fmt.Errorf("tools: %s %s: %w", "POST", p.Path, err)
		}
		r.defs = append(r.defs, def) // sorted by name, as the paths are
		r.byName[name] = def
	}
	return r, nil
}

func newDef(name string, op *oas.Operation) (*Def, error) {
	if op == nil {
		return nil, fmt.Errorf("tool %q has no POST operation", name)
	}
	if op.ID != name {
		return nil, fmt.Errorf("operationId %q differs from the tool name %q", op.ID, name)
	}
	if op.Request == nil || op.Request.Schema == nil || op.Request.Ref == "" {
		return nil, fmt.Errorf("tool %q: request body must be application/json with a $ref schema", name)
	}
	ok := op.Responses[200]
	if ok == nil || ok.Description == nil {
		return nil, fmt.Errorf("tool %q has no described 200 response", name)
	}
	if ok.Body == nil || ok.Body.Schema == nil {
		return nil, fmt.Errorf("tool %q: 200 response must be application/json", name)
	}
	failed := op.Responses[422]
	if failed == nil {
		return nil, fmt.Errorf("tool %q has no 422 response (its error codes)", name)
	}
	codes, err := operationCodes(name, failed)
	if err != nil {
		return nil, err
	}
	return buildDef(name, op, ok.Body.Schema, codes)
}

// buildDef is the Def of the tool name, whose operation op has the result
// schema out and the error codes codes. What a built-in tool does (writes
// files, runs commands, its hints) is the generated table's
// (gen.BuiltinTools); any other tool runs commands for all the runtime can
// vouch for.
func buildDef(name string, op *oas.Operation, out map[string]any, codes []gen.ErrorCode) (*Def, error) {
	description := op.Description
	if description == "" {
		description = op.Summary
	}
	inV, err := schema.Compile(op.Request.Schema, schema.Request)
	if err != nil {
		return nil, fmt.Errorf("tool %q input schema: %w", name, err)
	}
	outV, err := schema.Compile(out, schema.Response)
	if err != nil {
		return nil, fmt.Errorf("tool %q result schema: %w", name, err)
	}
	def := &Def{
		Spec: gen.ToolSpec{
			Name:              name,
			Description:       description,
			InputSchema:       op.Request.Schema,
			OutputDescription: *op.Responses[200].Description,
			ErrorDescription:  errorDescription(codes),
			ResultSchema:      &out,
			RunsCommands:      true,
		},
		InputSchemaName: refName(op.Request.Ref),
		op:              op,
		ErrorCodes:      codes,
		input:           inV,
		result:          outV,
	}
	for _, t := range gen.BuiltinTools() {
		if t.Name == name {
			def.Spec.WritesFiles, def.Spec.RunsCommands, def.Spec.Hints = t.WritesFiles, t.RunsCommands, t.Hints
		}
	}
	return def, nil
}

// Defs returns every tool the spec defines, sorted by name.
func (r *Registry) Defs() []*Def { return r.defs }

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (*Def, bool) {
	d, ok := r.byName[name]
	return d, ok
}

func refName(ref string) string { return ref[strings.LastIndexByte(ref, '/')+1:] }

// handlerInputName is the Go type name of a handler's input, which must equal
// the component name of the tool's input schema.
func handlerInputName(h Handler) string { return InputType(h).Name() }
