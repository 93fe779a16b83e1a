package tools

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
	"go.yaml.in/yaml/v3"
)

// Spec is a user's OpenAPI document of custom tools with the handlers
// registered for them. A custom tool is defined like a built-in one: an
// operation POST /v1/tools/{name} whose operationId is the name, whose
// request body is a $ref to the input schema component, with an optional
// result schema (its 200 response) and optional error codes (the
// x-error-codes of its 422 response, members of the built-in ErrorCode
// enum). Load one with LoadSpec, bind handlers with Register (or
// RegisterDeclared) and pass it to New in Config.Extra, which merges its
// tools with the built-in ones.
type Spec struct {
	reg   *Registry
	bound map[string]Handler // by tool name
}

// ValidToolName reports whether name may name a tool offered to a model:
// 1 to 64 ASCII letters, digits, - and _, the common ground of the
// providers' rules for function names. Custom tools and external MCP tools
// are held to it.
func ValidToolName(name string) bool { return ident.Plain(name) }

// LoadSpec parses and checks an OpenAPI 3.0 document (YAML or JSON) of
// custom tools. It refuses, naming the tool or the place and the problem:
// a path that is not /v1/tools/{name} or has another method than POST, an
// operationId that differs from the name, a tool without a description, an
// input that is not a $ref to an object schema, a $ref that points to
// nothing or outside the document, and an error code that is not in the
// built-in ErrorCode enum.
func LoadSpec(doc []byte) (*Spec, error) {
	if err := checkRefs(doc); err != nil {
		return nil, fmt.Errorf("tools: custom spec: %w", err)
	}
	t, err := parseSpec(doc)
	if err != nil {
		return nil, fmt.Errorf("tools: custom spec: %w", err)
	}
	reg := &Registry{byName: map[string]*Def{}}
	for _, path := range t.Paths.InMatchingOrder() {
		item := t.Paths.Value(path)
		name, ok := strings.CutPrefix(path, toolPathPrefix)
		if !ok || !ValidToolName(name) {
			return nil, fmt.Errorf("tools: custom spec: path %s is not a tool: a custom tool document holds only operations POST %s{name}, the name of letters, digits, _ and - (at most 64)", textclip.Clip(path, 200), toolPathPrefix)
		}
		for method := range item.Operations() {
			if method != "POST" {
				return nil, fmt.Errorf("tools: custom spec: tool %q: %s %s is not allowed: a tool is only a POST operation", name, method, path)
			}
		}
		def, err := newCustomDef(name, item.Post)
		if err != nil {
			return nil, fmt.Errorf("tools: custom spec: %w", err)
		}
		reg.defs = append(reg.defs, def)
		reg.byName[name] = def
	}
	if len(reg.defs) == 0 {
		return nil, fmt.Errorf("tools: custom spec: the document defines no tool (POST %s{name})", toolPathPrefix)
	}
	sort.Slice(reg.defs, func(i, j int) bool { return reg.defs[i].Spec.Name < reg.defs[j].Spec.Name })
	return &Spec{reg: reg, bound: map[string]Handler{}}, nil
}

// newCustomDef is newDef with a custom tool's looser rules: the result
// schema and the 422 response are optional, the input must be an object.
func newCustomDef(name string, op *openapi3.Operation) (*Def, error) {
	switch {
	case op.OperationID != name:
		return nil, fmt.Errorf("tool %q: operationId %q differs from the name in the path", name, textclip.Clip(op.OperationID, 64))
	case strings.TrimSpace(op.Description) == "" && strings.TrimSpace(op.Summary) == "":
		return nil, fmt.Errorf("tool %q has no description or summary (it is what the model is told)", name)
	case op.RequestBody == nil || op.RequestBody.Value == nil || op.RequestBody.Value.Content.Get("application/json") == nil:
		return nil, fmt.Errorf("tool %q has no application/json request body (its input schema)", name)
	}
	in := op.RequestBody.Value.Content.Get("application/json")
	if in.Schema == nil || in.Schema.Ref == "" {
		return nil, fmt.Errorf("tool %q: the request body's schema must be a $ref to a component (its generated Go type is the handler's input)", name)
	}
	if in.Schema.Value == nil || !in.Schema.Value.Type.Is("object") {
		return nil, fmt.Errorf("tool %q: the input schema %s must be of type object", name, refName(in.Schema.Ref))
	}
	ok := op.Responses.Status(200)
	if ok == nil || ok.Value == nil || ok.Value.Description == nil {
		return nil, fmt.Errorf("tool %q has no described 200 response", name)
	}
	var codes []gen.ErrorCode
	if failed := op.Responses.Status(422); failed != nil && failed.Value != nil {
		var err error
		if codes, err = operationCodes(name, failed.Value); err != nil {
			return nil, err
		}
	}
	return buildDef(name, op, in.Schema, resultSchemaRef(ok.Value), codes)
}

// resultSchemaRef is a 200 response's JSON schema, or an open object when
// the response declares none.
func resultSchemaRef(ok *openapi3.Response) *openapi3.SchemaRef {
	if out := ok.Content.Get("application/json"); out != nil && out.Schema != nil {
		return out.Schema
	}
	return openapi3.NewSchemaRef("", openapi3.NewObjectSchema())
}

// checkRefs walks the raw document and refuses every $ref that is not a
// local JSON pointer to something in it, saying where it is, so that a
// typo names its place instead of the loader's generic failure.
func checkRefs(doc []byte) error {
	var root any
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	var walk func(v any, at []string) error
	walk = func(v any, at []string) error {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if !strings.HasPrefix(ref, "#/") {
					return fmt.Errorf("%s: $ref %q is not a local reference (#/components/...); a custom tool document must be self-contained", where(at), textclip.Clip(ref, 200))
				}
				if _, ok := lookupPointer(root, ref[2:]); !ok {
					return fmt.Errorf("%s: $ref %q points to nothing in the document", where(at), textclip.Clip(ref, 200))
				}
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if err := walk(v[k], append(at, k)); err != nil {
					return err
				}
			}
		case []any:
			for i, item := range v {
				if err := walk(item, append(at, strconv.Itoa(i))); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(root, nil)
}

// where names a place in the document: the tool when it is inside one.
func where(at []string) string {
	if len(at) >= 2 && at[0] == "paths" {
		if name, ok := strings.CutPrefix(at[1], toolPathPrefix); ok {
			return fmt.Sprintf("tool %q", textclip.Clip(name, 64))
		}
	}
	return textclip.Clip(strings.Join(at, "/"), 200)
}

// lookupPointer resolves a JSON pointer (without its leading "#/") in a
// decoded document.
func lookupPointer(root any, ptr string) (any, bool) {
	v := root
	for tok := range strings.SplitSeq(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Tools returns the document's tools, sorted by name.
func (s *Spec) Tools() []*Def { return s.reg.Defs() }

// Register binds handlers to the document's tools the way the built-in
// tools are bound: each to the tool whose input schema component has the
// name of the handler's input type, which is the type oapi-codegen
// generated from the document (build handlers with Func). It refuses a
// handler whose type names no tool or whose JSON fields differ from the
// schema's properties (types generated from another version of the
// document), and a tool bound twice.
func (s *Spec) Register(handlers ...Handler) error {
	for _, h := range handlers {
		name := handlerInputName(h)
		var def *Def
		for _, d := range s.reg.Defs() {
			if d.InputSchemaName != name {
				continue
			}
			if def != nil {
				return fmt.Errorf("tools: tools %q and %q of the custom spec both take %s, so a handler bound by its input type cannot tell them apart; give each its own input schema", def.Spec.Name, d.Spec.Name, name)
			}
			def = d
		}
		if def == nil {
			return fmt.Errorf("tools: the handler for %s matches no tool of the custom spec (no tool's input schema is named %s)", name, name)
		}
		if err := s.bind(def, h); err != nil {
			return err
		}
		if err := sameFields(InputType(h), def.inSchema); err != nil {
			delete(s.bound, def.Spec.Name)
			return fmt.Errorf("tools: tool %q: the handler's input type %s: %w", def.Spec.Name, name, err)
		}
	}
	return nil
}

func (s *Spec) bind(def *Def, h Handler) error {
	if _, dup := s.bound[def.Spec.Name]; dup {
		return fmt.Errorf("tools: tool %q has two handlers", def.Spec.Name)
	}
	s.bound[def.Spec.Name] = h
	return nil
}

// sameFields compares the JSON names of a struct's fields with a
// schema's properties.
func sameFields(t reflect.Type, s *openapi3.Schema) error {
	if t.Kind() != reflect.Struct {
		return fmt.Errorf("is a %s, not a struct generated from the schema", t.Kind())
	}
	var fields []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		fields = append(fields, name)
	}
	var props []string
	for p := range s.Properties {
		props = append(props, p)
	}
	slices.Sort(fields)
	slices.Sort(props)
	if !slices.Equal(fields, props) {
		return fmt.Errorf("has the fields %v, the schema the properties %v: regenerate the types from the document", fields, props)
	}
	return nil
}

// unbound lists the document's tools that have no handler.
func (s *Spec) unbound() []string {
	var names []string
	for _, d := range s.reg.Defs() {
		if s.bound[d.Spec.Name] == nil {
			names = append(names, d.Spec.Name)
		}
	}
	return names
}

// withExtra returns a registry and binding of the built-in tools (reg,
// bound) and the custom ones of extra. It refuses a custom tool without a
// handler, and a name or an input schema name a built-in tool or an
// earlier document already has. reg and bound are not changed.
func withExtra(reg *Registry, bound map[string]Handler, extra []*Spec) (*Registry, map[string]Handler, map[string]bool, error) {
	merged := &Registry{byName: map[string]*Def{}, defs: slices.Clone(reg.defs)}
	all := maps.Clone(bound)
	builtinInputs := map[string]bool{}
	for _, d := range reg.defs {
		merged.byName[d.Spec.Name] = d
		builtinInputs[d.InputSchemaName] = true
	}
	custom := map[string]bool{}
	for _, s := range extra {
		if s == nil {
			return nil, nil, nil, fmt.Errorf("tools: a nil custom spec")
		}
		if names := s.unbound(); len(names) > 0 {
			return nil, nil, nil, fmt.Errorf("tools: custom tool %q has no handler (register one with Spec.Register or Spec.RegisterDeclared)", names[0])
		}
		for _, d := range s.reg.Defs() {
			name := d.Spec.Name
			switch {
			case custom[name]:
				return nil, nil, nil, fmt.Errorf("tools: custom tool %q is defined by two documents", name)
			case merged.byName[name] != nil:
				return nil, nil, nil, fmt.Errorf("tools: custom tool %q clashes with the built-in tool of that name", name)
			case builtinInputs[d.InputSchemaName]:
				return nil, nil, nil, fmt.Errorf("tools: custom tool %q: its input schema %s has the name of a built-in tool's input; rename it", name, d.InputSchemaName)
			}
			custom[name] = true
			merged.defs = append(merged.defs, d)
			merged.byName[name] = d
			all[name] = s.bound[name]
		}
	}
	sort.Slice(merged.defs, func(i, j int) bool { return merged.defs[i].Spec.Name < merged.defs[j].Spec.Name })
	return merged, all, custom, nil
}

// resultFor turns a handler's output text into a Result for def: a JSON
// object is the structured result as it is; other text becomes
// {"output": text}. The result must validate against def's result schema.
func resultFor(def *Def, text []byte) (Result, error) {
	data := map[string]any{"output": string(text)}
	if v, err := schema.Decode(text); err == nil {
		if m, ok := v.(map[string]any); ok {
			data = m
		}
	}
	if err := def.ValidateResult(data); err != nil {
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the handler's result does not match the result schema of %s: %v", def.Spec.Name, err)
	}
	return Result{Content: string(text), Data: data}, nil
}

// rawHandler is a handler bound by tool name that gets the arguments as
// JSON values: the handlers a document declares.
type rawHandler struct {
	need Needs
	fn   func(ctx context.Context, env *Env, args map[string]any) (Result, error)
}

func (h rawHandler) inputType() reflect.Type { return reflect.TypeFor[map[string]any]() }
func (h rawHandler) needs() Needs            { return h.need }
func (h rawHandler) call(ctx context.Context, env *Env, args map[string]any) (Result, error) {
	return h.fn(ctx, env, args)
}
