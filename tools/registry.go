package tools

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
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
type Registry struct{ defs []*Def }

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
	r, err := newRegistry(d, false)
	if err != nil {
		return nil, fmt.Errorf("tools: spec: %w", err)
	}
	return r, nil
}

// newRegistry derives the tools of doc. A custom tool document (custom)
// holds nothing but tools, each only a POST operation, and a tool's
// result schema and 422 response are optional there.
func newRegistry(doc *oas.Doc, custom bool) (*Registry, error) {
	r := &Registry{}
	for _, p := range doc.Paths {
		name, ok := strings.CutPrefix(p.Path, toolPathPrefix)
		if !ok || !ValidToolName(name) {
			if custom {
				return nil, fmt.Errorf("path %s is not a tool: a custom tool document holds only operations POST %s{name}, the name of letters, digits, _ and - (at most 64)", textclip.Clip(p.Path, 200), toolPathPrefix)
			}
			continue
		}
		for _, method := range slices.Sorted(maps.Keys(p.Operations)) {
			if custom && method != "POST" {
				return nil, fmt.Errorf("tool %q: %s %s is not allowed: a tool is only a POST operation", name, method, p.Path)
			}
		}
		def, err := newDef(name, p.Operations["POST"], custom)
		if err != nil {
			return nil, err
		}
		r.defs = append(r.defs, def) // sorted by name, as the paths are
	}
	return r, nil
}

// newDef is the Def of the tool name, whose operation is op. What a
// built-in tool does (writes files, runs commands, its hints) is the
// generated table's (gen.BuiltinTools); any other tool runs commands for
// all the runtime can vouch for.
func newDef(name string, op *oas.Operation, custom bool) (*Def, error) {
	switch {
	case op == nil:
		return nil, fmt.Errorf("tool %q has no POST operation", name)
	case op.ID != name:
		return nil, fmt.Errorf("tool %q: operationId %q differs from the name in the path", name, textclip.Clip(op.ID, 64))
	case strings.TrimSpace(op.Description) == "" && strings.TrimSpace(op.Summary) == "":
		return nil, fmt.Errorf("tool %q has no description or summary (it is what the model is told)", name)
	case op.Request == nil:
		return nil, fmt.Errorf("tool %q has no application/json request body (its input schema)", name)
	case op.Request.Schema == nil || op.Request.Ref == "":
		return nil, fmt.Errorf("tool %q: the request body's schema must be a $ref to a component (its generated Go type is the handler's input)", name)
	case !isObject(op.Request.Schema):
		return nil, fmt.Errorf("tool %q: the input schema %s must be of type object", name, refName(op.Request.Ref))
	}
	ok := op.Responses[200]
	if ok == nil || ok.Description == nil {
		return nil, fmt.Errorf("tool %q has no described 200 response", name)
	}
	// A custom tool's 200 response without a JSON schema is an open object.
	out := map[string]any{"type": "object"}
	switch {
	case ok.Body != nil && ok.Body.Schema != nil:
		out = ok.Body.Schema
	case !custom:
		return nil, fmt.Errorf("tool %q: 200 response must be application/json", name)
	}
	var codes []gen.ErrorCode
	if failed := op.Responses[422]; failed != nil {
		var err error
		if codes, err = operationCodes(name, failed); err != nil {
			return nil, err
		}
	} else if !custom {
		return nil, fmt.Errorf("tool %q has no 422 response (its error codes)", name)
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
			Description:       cmp.Or(op.Description, op.Summary),
			InputSchema:       op.Request.Schema,
			OutputDescription: *ok.Description,
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

// isObject reports whether a schema's type is object (or object and null).
func isObject(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object")) && !slices.ContainsFunc(t, func(n any) bool { return n != "object" && n != "null" })
	}
	return false
}

// Defs returns every tool the spec defines, sorted by name.
func (r *Registry) Defs() []*Def { return r.defs }

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (*Def, bool) {
	i, ok := slices.BinarySearchFunc(r.defs, name, func(d *Def, name string) int { return strings.Compare(d.Spec.Name, name) })
	if !ok {
		return nil, false
	}
	return r.defs[i], true
}

func refName(ref string) string { return ref[strings.LastIndexByte(ref, '/')+1:] }
