// Package adapt holds what the provider adapters (model/openai,
// model/anthropic) share: the tools offered to a provider, derived from the
// spec's tool specs plus a finish tool derived from the spec's Finish schema;
// the provider-neutral rendering of a run's history (a turn's calls in a
// row, then their results); the conversion of a provider's reply into a
// turn of the spec's Actions; the Model both adapters are (New, Next,
// ContextWindow, RequestTokens), driven by each provider's Codec of its
// wire; the HTTP call both make (Endpoint: the retries, the per-attempt
// timeout, the error bodies, the event streams) and provider error
// reporting (ProviderError); and the JSON adapter
// (ParseAction, ParseTurn), which package model exports. Nothing here
// keeps state between calls.
//
// Nothing here knows a provider's request or reply format (only the shape
// their error bodies share, the event stream framing and Config, the one
// configuration of both), and nothing names a tool or a JSON field: names
// come from the spec and the generated types.
package adapt

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/specloop/specloop/gen"
)

// Tool is one function a provider is told about.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, self-contained (no
	// $ref). Providers must not modify it.
	Parameters map[string]any
}

// Toolset is the tools offered to a provider: the runtime's tools in the
// order given, then the finish tool.
type Toolset struct {
	// Tools are every tool, finish last.
	Tools []Tool
	// Finish is the finish tool's name (the spec's finish action type).
	Finish string
	names  map[string]bool
	list   string // the names, comma separated, for feedback
	// discriminator is the Action's discriminator property ("type"), which
	// the finish tool's parameters leave out.
	discriminator string
	// adapterSet are the Finish's properties the adapter sets (its
	// reasoning and its text), which the finish tool's parameters leave
	// out too.
	adapterSet []string
}

// loadFinish returns the Toolset of no tools, the finish tool alone,
// derived from the spec once.
var loadFinish = sync.OnceValues(func() (*Toolset, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return nil, err
	}
	return deriveFinish(doc.Schemas)
})

// deriveFinish builds the finish tool from the spec's schemas (converted
// and inlined by internal/oas, so a provider can read them alone): its
// name is the finish action type, its description the Finish schema's,
// and its parameters the Finish schema without the Action discriminator,
// the reasoning and the text (the adapter sets them).
func deriveFinish(schemas map[string]map[string]any) (*Toolset, error) {
	actionName := reflect.TypeFor[gen.Action]().Name()
	finishName := reflect.TypeFor[gen.Finish]().Name()
	disc := discriminator(schemas[actionName])
	finish, ok := schemas[finishName]
	if disc == "" || !ok {
		return nil, fmt.Errorf("adapt: the spec has no %s schema with a discriminator or no %s schema", actionName, finishName)
	}
	adapterSet := []string{jsonName(reflect.TypeFor[gen.Finish](), "Reasoning"), jsonName(reflect.TypeFor[gen.Finish](), "Text")}
	// A copy: the spec's document is shared.
	params, err := jsonCopy(finish)
	if err != nil {
		return nil, fmt.Errorf("adapt: %s schema: %w", finishName, err)
	}
	hidden := func(v any) bool { s, _ := v.(string); return s == disc || slices.Contains(adapterSet, s) }
	if props, ok := params["properties"].(map[string]any); ok {
		maps.DeleteFunc(props, func(k string, _ any) bool { return hidden(k) })
	}
	if req, ok := params["required"].([]any); ok {
		params["required"] = slices.DeleteFunc(slices.Clone(req), hidden)
	}
	description, _ := finish["description"].(string)
	name := string(gen.ActionTypeFinish)
	return &Toolset{
		Tools:         []Tool{{Name: name, Description: description, Parameters: params}},
		Finish:        name,
		names:         map[string]bool{name: true},
		list:          name,
		discriminator: disc,
		adapterSet:    adapterSet,
	}, nil
}

// jsonName returns the JSON name of t's field, "" when t has no such
// field.
func jsonName(t reflect.Type, field string) string {
	f, ok := t.FieldByName(field)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// NewToolset returns the tools for specs plus the finish tool. It fails when
// a spec is named like the finish tool or two specs share a name.
func NewToolset(specs []gen.ToolSpec) (*Toolset, error) {
	fin, err := loadFinish()
	if err != nil {
		return nil, err
	}
	ts := &Toolset{Finish: fin.Finish, names: maps.Clone(fin.names), discriminator: fin.discriminator, adapterSet: fin.adapterSet}
	names := make([]string, 0, len(specs)+1)
	for _, s := range specs {
		if s.Name == "" {
			return nil, errors.New("adapt: a tool spec has no name")
		}
		if ts.names[s.Name] {
			if s.Name == fin.Finish {
				return nil, fmt.Errorf("adapt: tool %q clashes with the finish tool", s.Name)
			}
			return nil, fmt.Errorf("adapt: two tools are named %q", s.Name)
		}
		ts.names[s.Name] = true
		ts.Tools = append(ts.Tools, Tool{Name: s.Name, Description: Describe(s), Parameters: s.InputSchema})
		names = append(names, s.Name)
	}
	ts.Tools = append(ts.Tools, fin.Tools...)
	ts.list = strings.Join(append(names, fin.Finish), ", ")
	return ts, nil
}

// Describe is the description a provider gets for a tool: what it does and
// what it returns, from the spec. The spec's error description is left out:
// it is a third of the bytes every request would carry, and a failure
// reaches the model as an error result that names its code and says what
// went wrong.
func Describe(s gen.ToolSpec) string {
	if s.OutputDescription == "" {
		return s.Description
	}
	return s.Description + "\n\nReturns: " + s.OutputDescription
}

// jsonCopy returns v's JSON form decoded as an object: a deep copy of a
// decoded JSON Schema, or a generated type's fields by their JSON names.
func jsonCopy(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}
