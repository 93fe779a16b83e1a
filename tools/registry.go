package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
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

	// The parsed schemas stay unexported, so that the OpenAPI library is
	// not part of this package's API: Spec holds them as JSON Schema.
	inSchema  *openapi3.Schema
	outSchema *openapi3.Schema
	op        *openapi3.Operation
	input     *schema.Validator
	result    *schema.Validator
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
	t, err := parseSpec(doc)
	if err != nil {
		return nil, fmt.Errorf("tools: spec: %w", err)
	}
	return newRegistry(t)
}

// parseSpec loads and validates an OpenAPI document. Its examples are not
// validated here: whether they are right is the contract tests' matter, and
// a runtime does not use them.
func parseSpec(data []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("invalid: %w", err)
	}
	return doc, nil
}

func newRegistry(doc *openapi3.T) (*Registry, error) {
	r := &Registry{byName: map[string]*Def{}}
	for path, item := range doc.Paths.Map() {
		name, ok := strings.CutPrefix(path, toolPathPrefix)
		if !ok || !ValidToolName(name) {
			continue
		}
		def, err := newDef(name, item.Post)
		if err != nil {
			return nil, fmt.Errorf("tools: %s %s: %w", "POST", path, err)
		}
		r.defs = append(r.defs, def)
		r.byName[name] = def
	}
	sort.Slice(r.defs, func(i, j int) bool { return r.defs[i].Spec.Name < r.defs[j].Spec.Name })
	return r, nil
}

func newDef(name string, op *openapi3.Operation) (*Def, error) {
	if op == nil {
		return nil, fmt.Errorf("tool %q has no POST operation", name)
	}
	if op.OperationID != name {
		return nil, fmt.Errorf("operationId %q differs from the tool name %q", op.OperationID, name)
	}
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil, fmt.Errorf("tool %q has no request body", name)
	}
	in := op.RequestBody.Value.Content.Get("application/json")
	if in == nil || in.Schema == nil || in.Schema.Ref == "" {
		return nil, fmt.Errorf("tool %q: request body must be application/json with a $ref schema", name)
	}
	ok := op.Responses.Status(200)
	if ok == nil || ok.Value == nil || ok.Value.Description == nil {
		return nil, fmt.Errorf("tool %q has no described 200 response", name)
	}
	out := ok.Value.Content.Get("application/json")
	if out == nil || out.Schema == nil {
		return nil, fmt.Errorf("tool %q: 200 response must be application/json", name)
	}
	failed := op.Responses.Status(422)
	if failed == nil || failed.Value == nil {
		return nil, fmt.Errorf("tool %q has no 422 response (its error codes)", name)
	}
	codes, err := operationCodes(name, failed.Value)
	if err != nil {
		return nil, err
	}
	return buildDef(name, op, in.Schema, out.Schema, codes)
}

// buildDef is the Def of the tool name, whose operation op has the input
// schema in, the result schema out and the error codes codes. What a
// built-in tool does (writes files, runs commands, its hints) is the
// generated table's (gen.BuiltinTools); any other tool runs commands for
// all the runtime can vouch for.
func buildDef(name string, op *openapi3.Operation, in, out *openapi3.SchemaRef, codes []gen.ErrorCode) (*Def, error) {
	description := op.Description
	if description == "" {
		description = op.Summary
	}
	inputSchema, err := inlineSchema(in)
	if err != nil {
		return nil, fmt.Errorf("tool %q input schema: %w", name, err)
	}
	resultSchema, err := inlineSchema(out)
	if err != nil {
		return nil, fmt.Errorf("tool %q result schema: %w", name, err)
	}
	inV, err := schema.CompileFor(in.Value, schema.Request)
	if err != nil {
		return nil, fmt.Errorf("tool %q input schema: %w", name, err)
	}
	outV, err := schema.CompileFor(out.Value, schema.Response)
	if err != nil {
		return nil, fmt.Errorf("tool %q result schema: %w", name, err)
	}
	def := &Def{
		Spec: gen.ToolSpec{
			Name:              name,
			Description:       description,
			InputSchema:       inputSchema,
			OutputDescription: *op.Responses.Status(200).Value.Description,
			ErrorDescription:  errorDescription(codes),
			ResultSchema:      &resultSchema,
			RunsCommands:      true,
		},
		InputSchemaName: refName(in.Ref),
		inSchema:        in.Value,
		outSchema:       out.Value,
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

// inlineSchema renders a schema as a JSON Schema object with every $ref
// replaced by the schema it names (examples dropped), so a model or a
// provider sees one self-contained schema.
func inlineSchema(ref *openapi3.SchemaRef) (map[string]any, error) {
	v, err := inlineRef(ref, 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

const maxInlineDepth = 32

func inlineRef(ref *openapi3.SchemaRef, depth int) (any, error) {
	if depth > maxInlineDepth {
		return nil, fmt.Errorf("schema nesting deeper than %d (a recursive $ref?)", maxInlineDepth)
	}
	s := ref.Value
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "example")
	delete(m, "examples")
	for name, prop := range s.Properties {
		v, err := inlineRef(prop, depth+1)
		if err != nil {
			return nil, err
		}
		m["properties"].(map[string]any)[name] = v
	}
	if s.Items != nil {
		v, err := inlineRef(s.Items, depth+1)
		if err != nil {
			return nil, err
		}
		m["items"] = v
	}
	if ap := s.AdditionalProperties.Schema; ap != nil {
		v, err := inlineRef(ap, depth+1)
		if err != nil {
			return nil, err
		}
		m["additionalProperties"] = v
	}
	for key, list := range map[string]openapi3.SchemaRefs{"oneOf": s.OneOf, "anyOf": s.AnyOf, "allOf": s.AllOf} {
		if len(list) == 0 {
			continue
		}
		out := make([]any, len(list))
		for i, item := range list {
			if out[i], err = inlineRef(item, depth+1); err != nil {
				return nil, err
			}
		}
		m[key] = out
	}
	return m, nil
}

// handlerInputName is the Go type name of a handler's input, which must equal
// the component name of the tool's input schema.
func handlerInputName(h Handler) string { return InputType(h).Name() }
