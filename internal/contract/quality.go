package contract

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
)

// problemMediaType is the media type of every error response (RFC 9457).
const problemMediaType = "application/problem+json"

// CheckSpec checks the quality rules of the spec (see the design notes):
//
//   - kin-openapi validates the document (examples included);
//   - every operation has an operationId, a summary and error responses,
//     each described and answered with application/problem+json whose
//     schema is the Problem component; operations that need a token declare
//     401, operations with a request body declare 400 and 413, with
//     parameters 400, with path parameters 404; every parameter has a
//     description;
//   - every schema component and every property has a description (a $ref
//     property is described by its component);
//   - numbers that are not integers are `format: double`;
//   - no property is both optional and nullable;
//   - objects that are inputs are closed (additionalProperties: false); an
//     explicit `additionalProperties: true` is a deliberate open map;
//   - every oneOf lists only $refs, has a discriminator and a mapping that
//     pairs each member with exactly one value, and each member requires the
//     discriminator property with exactly its mapped value as enum.
//
// Inputs are the schemas reachable from request bodies and parameters, and
// from the discriminated unions (Action, HistoryItem, ...), which are how
// models and clients talk to the runtime.
func CheckSpec(doc *openapi3.T) []Problem {
	var ps []Problem
	if err := doc.Validate(context.Background()); err != nil {
		ps = append(ps, Problem{Subject: "spec", Message: "kin-openapi rejects the document: " + err.Error()})
	}
	w := &specWalker{doc: doc, inputs: map[*openapi3.Schema]bool{}}
	w.findInputs()
	ps = append(ps, checkOperations(doc)...)
	if doc.Components != nil {
		for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
			ref := doc.Components.Schemas[name]
			if ref == nil || ref.Value == nil {
				continue
			}
			if ref.Value.Description == "" {
				w.add("schema "+name, "", "the component has no description")
			}
			w.walk(ref.Value, "schema "+name, "")
		}
		for _, name := range slices.Sorted(maps.Keys(doc.Components.Parameters)) {
			if p := doc.Components.Parameters[name]; p != nil && p.Value != nil {
				w.parameter(p.Value, "parameter "+name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(doc.Components.Responses)) {
			if r := doc.Components.Responses[name]; r != nil && r.Value != nil {
				w.content(r.Value.Content, "response "+name)
			}
		}
	}
	for _, op := range operations(doc) {
		subject := op.subject()
		for _, p := range op.params {
			if p.Ref == "" && p.Value != nil {
				w.parameter(p.Value, subject+" parameter "+p.Value.Name)
			}
		}
		if rb := op.op.RequestBody; rb != nil && rb.Ref == "" && rb.Value != nil {
			w.content(rb.Value.Content, subject+" request body")
		}
		for status, r := range op.op.Responses.Map() {
			if r.Ref == "" && r.Value != nil {
				w.content(r.Value.Content, subject+" response "+status)
			}
		}
	}
	return append(ps, w.ps...)
}

// operation is one operation with its method, path and parameters (the
// path item's and its own).
type operation struct {
	method, path string
	op           *openapi3.Operation
	params       openapi3.Parameters
}

func (o operation) subject() string {
	if o.op.OperationID != "" {
		return o.op.OperationID
	}
	return o.method + " " + o.path
}

// operations lists every operation of doc, sorted by path and method.
func operations(doc *openapi3.T) []operation {
	var out []operation
	if doc.Paths == nil {
		return nil
	}
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			op := ops[method]
			params := slices.Clone(item.Parameters)
			params = append(params, op.Parameters...)
			out = append(out, operation{method: method, path: path, op: op, params: params})
		}
	}
	return out
}

func checkOperations(doc *openapi3.T) []Problem {
	var ps []Problem
	problemName := componentName[gen.Problem]()
	for _, o := range operations(doc) {
		subject := o.subject()
		add := func(msg string, args ...any) {
			ps = append(ps, Problem{Subject: subject, Message: fmt.Sprintf(msg, args...)})
		}
		if o.op.OperationID == "" {
			add("%s %s has no operationId", o.method, o.path)
		}
		if o.op.Summary == "" {
			add("the operation has no summary")
		}
		declared := map[int]bool{}
		errorsDeclared := 0
		for key, r := range o.op.Responses.Map() {
			status, err := strconv.Atoi(key)
			if err != nil && key != "default" {
				add("response %q is not a status code", key)
				continue
			}
			declared[status] = true
			if r == nil || r.Value == nil {
				continue
			}
			if r.Value.Description == nil || *r.Value.Description == "" {
				add("response %s has no description", key)
			}
			if key != "default" && status < 400 {
				continue
			}
			errorsDeclared++
			types := slices.Sorted(maps.Keys(r.Value.Content))
			mt := r.Value.Content.Get(problemMediaType)
			switch {
			case len(types) != 1 || mt == nil:
				add("error response %s must have exactly the content type %s, has %s", key, problemMediaType, strings.Join(types, ", "))
			case mt.Schema == nil || !strings.HasSuffix(mt.Schema.Ref, "/"+problemName):
				add("error response %s must use the %s schema", key, problemName)
			}
		}
		if errorsDeclared == 0 {
			add("the operation documents no error response")
		}
		security := doc.Security
		if o.op.Security != nil {
			security = *o.op.Security
		}
		need := func(status int, why string) {
			if !declared[status] {
				add("the operation %s but does not declare %d %s", why, status, http.StatusText(status))
			}
		}
		if len(security) > 0 {
			need(http.StatusUnauthorized, "needs a token")
		}
		if o.op.RequestBody != nil {
			need(http.StatusBadRequest, "takes a request body")
			need(http.StatusRequestEntityTooLarge, "takes a request body")
		}
		if len(o.params) > 0 {
			need(http.StatusBadRequest, "takes parameters")
		}
		for _, p := range o.params {
			if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
				need(http.StatusNotFound, "names a resource in its path")
				break
			}
		}
	}
	return ps
}

// specWalker walks schemas and collects problems.
type specWalker struct {
	doc    *openapi3.T
	inputs map[*openapi3.Schema]bool
	ps     []Problem
}

func (w *specWalker) add(subject, field, msg string) {
	w.ps = append(w.ps, Problem{Subject: subject, Field: field, Message: msg})
}

// findInputs marks every schema reachable from a request body, a parameter
// or a discriminated union.
func (w *specWalker) findInputs() {
	for _, o := range operations(w.doc) {
		for _, p := range o.params {
			if p.Value != nil {
				w.markInput(p.Value.Schema)
			}
		}
		if rb := o.op.RequestBody; rb != nil && rb.Value != nil {
			for _, mt := range rb.Value.Content {
				w.markInput(mt.Schema)
			}
		}
	}
	if w.doc.Components == nil {
		return
	}
	for _, ref := range w.doc.Components.Schemas {
		if ref != nil && ref.Value != nil && ref.Value.Discriminator != nil {
			w.markInput(ref)
		}
	}
}

func (w *specWalker) markInput(ref *openapi3.SchemaRef) {
	if ref == nil || ref.Value == nil || w.inputs[ref.Value] {
		return
	}
	s := ref.Value
	w.inputs[s] = true
	for _, p := range s.Properties {
		w.markInput(p)
	}
	w.markInput(s.Items)
	w.markInput(s.AdditionalProperties.Schema)
	w.markInput(s.Not)
	for _, list := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf, s.AllOf} {
		for _, m := range list {
			w.markInput(m)
		}
	}
}

func (w *specWalker) parameter(p *openapi3.Parameter, subject string) {
	if p.Description == "" {
		w.add(subject, "", "the parameter has no description")
	}
	if p.Schema == nil {
		w.add(subject, "", "the parameter has no schema")
		return
	}
	if p.Schema.Ref == "" && p.Schema.Value != nil {
		w.walk(p.Schema.Value, subject, "")
	}
}

func (w *specWalker) content(c openapi3.Content, subject string) {
	for _, mtName := range slices.Sorted(maps.Keys(c)) {
		if mt := c[mtName]; mt != nil && mt.Schema != nil && mt.Schema.Ref == "" && mt.Schema.Value != nil {
			w.walk(mt.Schema.Value, subject+" "+mtName, "")
		}
	}
}

// walk checks one schema written in place (components and inline schemas;
// $refs are checked where their component is).
func (w *specWalker) walk(s *openapi3.Schema, subject, field string) {
	if s.Type.Is(openapi3.TypeNumber) && s.Format != "double" {
		w.add(subject, field, "a number must be `format: double` (plain number becomes float32)")
	}
	if kw := unwantedKeyword(s); kw != "" {
		w.add(subject, field, "the keyword "+kw+" is not used in this spec (keep schemas to what OpenAPI 3.0 validators check the same way)")
	}
	if w.inputs[s] && isObject(s) && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
		w.add(subject, field, "an input object must say `additionalProperties: false` (or `true` for a deliberate open map)")
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		if p == nil || p.Value == nil {
			continue
		}
		pf := field + pointer(name)
		if p.Value.Nullable && !required[name] {
			w.add(subject, pf, "the property is optional and nullable; make absent and null the same (drop nullable)")
		}
		if p.Ref != "" {
			continue
		}
		if p.Value.Description == "" {
			w.add(subject, pf, "the property has no description")
		}
		w.walk(p.Value, subject, pf)
	}
	if s.Items != nil && s.Items.Ref == "" && s.Items.Value != nil {
		w.walk(s.Items.Value, subject, field+"/items")
	}
	if ap := s.AdditionalProperties.Schema; ap != nil && ap.Ref == "" && ap.Value != nil {
		w.walk(ap.Value, subject, field+"/additionalProperties")
	}
	if len(s.OneOf) > 0 {
		w.oneOf(s, subject, field)
	}
}

// unwantedKeyword returns a keyword the project keeps out of its spec:
// JSON Schema keywords that kin-openapi's OpenAPI 3.0 validator ignores
// (so a document would rely on a rule nobody checks), anyOf and not
// (oneOf with a discriminator says the same more clearly), and a
// discriminator outside oneOf.
func unwantedKeyword(s *openapi3.Schema) string {
	switch {
	case len(s.AnyOf) > 0:
		return "anyOf"
	case s.Not != nil:
		return "not"
	case s.If != nil || s.Then != nil || s.Else != nil:
		return "if/then/else"
	case s.Const != nil:
		return "const"
	case len(s.PrefixItems) > 0:
		return "prefixItems"
	case s.Contains != nil || s.MinContains != nil || s.MaxContains != nil:
		return "contains"
	case len(s.PatternProperties) > 0:
		return "patternProperties"
	case len(s.DependentSchemas) > 0 || len(s.DependentRequired) > 0:
		return "dependentSchemas/dependentRequired"
	case s.PropertyNames != nil:
		return "propertyNames"
	case s.UnevaluatedItems.Has != nil || s.UnevaluatedItems.Schema != nil ||
		s.UnevaluatedProperties.Has != nil || s.UnevaluatedProperties.Schema != nil:
		return "unevaluatedItems/unevaluatedProperties"
	case s.DynamicRef != "":
		return "$dynamicRef"
	case s.Discriminator != nil && len(s.OneOf) == 0:
		return "discriminator (outside oneOf)"
	}
	return ""
}

func isObject(s *openapi3.Schema) bool {
	return s.Type.Is(openapi3.TypeObject) || (s.Type == nil && len(s.Properties) > 0)
}

// oneOf checks a union: $ref members, a discriminator, a one-to-one
// mapping, and members that pin the discriminator property.
func (w *specWalker) oneOf(s *openapi3.Schema, subject, field string) {
	members := map[string]*openapi3.Schema{}
	for i, m := range s.OneOf {
		if m.Ref == "" {
			w.add(subject, field, fmt.Sprintf("oneOf member %d is not a $ref; unions list named components only", i))
			continue
		}
		if _, dup := members[m.Ref]; dup {
			w.add(subject, field, fmt.Sprintf("oneOf lists %s twice", m.Ref))
		}
		members[m.Ref] = m.Value
	}
	d := s.Discriminator
	if d == nil || d.PropertyName == "" {
		w.add(subject, field, "the oneOf has no discriminator (propertyName and mapping)")
		return
	}
	if len(d.Mapping) == 0 {
		w.add(subject, field, "the discriminator has no mapping; map every value to its member explicitly")
		return
	}
	mapped := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(d.Mapping)) {
		ref := d.Mapping[key].Ref
		if other, dup := mapped[ref]; dup {
			w.add(subject, field, fmt.Sprintf("the mapping sends both %q and %q to %s; it must be one-to-one", other, key, ref))
			continue
		}
		mapped[ref] = key
		m, ok := members[ref]
		if !ok {
			w.add(subject, field, fmt.Sprintf("the mapping value %q names %s, which is not a oneOf member", key, ref))
			continue
		}
		w.pinned(m, d.PropertyName, key, subject, field, ref)
	}
	for _, ref := range slices.Sorted(maps.Keys(members)) {
		if _, ok := mapped[ref]; !ok {
			w.add(subject, field, fmt.Sprintf("oneOf member %s has no discriminator mapping", ref))
		}
	}
}

// pinned checks that a union member requires the discriminator property
// and allows exactly its mapped value.
func (w *specWalker) pinned(m *openapi3.Schema, prop, key, subject, field, ref string) {
	if m == nil {
		return
	}
	if !slices.Contains(m.Required, prop) {
		w.add(subject, field, fmt.Sprintf("member %s does not require the discriminator property %s", ref, prop))
	}
	p := m.Properties[prop]
	if p == nil || p.Value == nil || len(p.Value.Enum) != 1 || p.Value.Enum[0] != key {
		w.add(subject, field, fmt.Sprintf("member %s must pin %s to exactly [%s] (an enum of its mapped value)", ref, prop, key))
	}
}
