package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
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
	doc   []byte             // the document LoadSpec was given
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
// nothing or outside the document, a schema that contains itself or has a
// keyword OpenAPI 3.0 schemas lack, and an error code that is not in the
// built-in ErrorCode enum. The model is told each schema as JSON Schema
// 2020-12: nullable becomes a "null" type, x- keys and examples are left
// out.
func LoadSpec(doc []byte) (*Spec, error) {
	d, err := oas.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("tools: custom spec: %w", placed(err))
	}
	reg, err := newRegistry(d, true)
	if err != nil {
		return nil, fmt.Errorf("tools: custom spec: %w", err)
	}
	if len(reg.defs) == 0 {
		return nil, fmt.Errorf("tools: custom spec: the document defines no tool (POST %s{name})", toolPathPrefix)
	}
	return &Spec{reg: reg, bound: map[string]Handler{}, doc: slices.Clone(doc)}, nil
}

// Document is the document s was loaded from, as LoadSpec got it: data
// another process loads again (a Temporal worker, for the runs of an API
// server), with the handlers its operations declare.
func (s *Spec) Document() []byte { return s.doc }

// CommandTools are the names of s's tools bound to a handler that runs a
// command (a declared x-specloop-argv, or a Go handler that NeedsCommands),
// which a runtime without commands refuses; sorted.
func (s *Spec) CommandTools() []string {
	var names []string
	for name, h := range s.bound {
		if h.need == NeedsCommands {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// placed names the tool an *oas.Error is in, when it is in one; the
// place inside the operation follows the problem.
func placed(err error) error {
	var e *oas.Error
	if !errors.As(err, &e) || len(e.At) < 2 || e.At[0] != "paths" {
		return err
	}
	name, ok := strings.CutPrefix(e.At[1], toolPathPrefix)
	if !ok {
		return err
	}
	return fmt.Errorf("tool %q: %s (at %s)", textclip.Clip(name, 64), e.Problem, textclip.Clip(oas.Pointer(e.At), 200))
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
		name := InputName(h)
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
		if err := sameFields(InputType(h), def.Spec.InputSchema); err != nil {
			return fmt.Errorf("tools: tool %q: the handler's input type %s: %w", def.Spec.Name, name, err)
		}
		if err := s.bind(def, h); err != nil {
			return err
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
func sameFields(t reflect.Type, s map[string]any) error {
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
	props, _ := s["properties"].(map[string]any)
	slices.Sort(fields)
	if names := slices.Sorted(maps.Keys(props)); !slices.Equal(fields, names) {
		return fmt.Errorf("has the fields %v, the schema the properties %v: regenerate the types from the document", fields, names)
	}
	return nil
}

// withExtra returns a registry and binding of the built-in tools (reg,
// bound) and the custom ones of extra. It refuses a custom tool without a
// handler, and a name or an input schema name a built-in tool or an
// earlier document already has. reg and bound are not changed.
func withExtra(reg *Registry, bound map[string]Handler, extra []*Spec) (*Registry, map[string]Handler, map[string]bool, error) {
	merged := &Registry{defs: slices.Clone(reg.defs)}
	all := maps.Clone(bound)
	custom := map[string]bool{}
	for _, s := range extra {
		if s == nil {
			return nil, nil, nil, fmt.Errorf("tools: a nil custom spec")
		}
		for _, d := range s.reg.Defs() {
			name := d.Spec.Name
			switch {
			case s.bound[name].call == nil:
				return nil, nil, nil, fmt.Errorf("tools: custom tool %q has no handler (register one with Spec.Register or Spec.RegisterDeclared)", name)
			case custom[name]:
				return nil, nil, nil, fmt.Errorf("tools: custom tool %q is defined by two documents", name)
			case bound[name].call != nil:
				return nil, nil, nil, fmt.Errorf("tools: custom tool %q clashes with the built-in tool of that name", name)
			case slices.ContainsFunc(reg.defs, func(b *Def) bool { return b.InputSchemaName == d.InputSchemaName }):
				return nil, nil, nil, fmt.Errorf("tools: custom tool %q: its input schema %s has the name of a built-in tool's input; rename it", name, d.InputSchemaName)
			}
			custom[name] = true
			merged.defs = append(merged.defs, d)
			all[name] = s.bound[name]
		}
	}
	slices.SortFunc(merged.defs, func(a, b *Def) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
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
// JSON text: the handlers a document declares.
func rawHandler(need Needs, fn func(ctx context.Context, env *Env, input []byte) (Result, error)) Handler {
	return Handler{in: reflect.TypeFor[map[string]any](), need: need, call: func(ctx context.Context, env *Env, args map[string]any) (Result, error) {
		input, err := json.Marshal(args)
		if err != nil {
			return Result{}, fmt.Errorf("encode the arguments: %w", err)
		}
		return fn(ctx, env, input)
	}}
}
