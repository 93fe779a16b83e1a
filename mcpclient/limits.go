package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// What an MCP server may offer. A server is untrusted input (its schemas
// and descriptions go into every model request, and the schemas validate
// every call): these caps bound what one server can make a run hold and
// compute. A server over a cap is refused at start with a message that
// names it and the tool, except a long description, which is clipped.
const (
	// MaxToolsPerServer is the most tools one server may offer; a server
	// that lists more is refused whole.
	MaxToolsPerServer = 256
	// MaxTools is the most MCP tools a run takes from all its servers
	// together.
	MaxTools = 512
	// MaxDescriptionBytes is the longest tool description the model is
	// shown; a longer one is clipped, with a marker saying so, and the
	// session's warnings (and Config.Stderr) say which tools were.
	MaxDescriptionBytes = 4 << 10
	// MaxSchemaBytes is the largest input or output schema of a tool, as
	// compact JSON.
	MaxSchemaBytes = 64 << 10
	// MaxServerBytes is the most one server's tools may add to every
	// model request: their descriptions (clipped) and schemas together.
	MaxServerBytes = 1 << 20
	// MaxSchemaDepth is the deepest a schema's JSON may nest (objects and
	// arrays).
	MaxSchemaDepth = 64
	// MaxSchemaCost bounds the work of validating one value: the most
	// times one place of the value (the value itself, a property, an item)
	// may be checked against a subschema. oneOf, anyOf and allOf check a
	// place against each branch and a $ref against its target, so the
	// cost multiplies along chains of references: 24 levels of
	// oneOf [$ref next, $ref next, null] cost 2^25. Real tool schemas cost
	// tens to hundreds.
	MaxSchemaCost = 10_000
	// MaxArgumentDepth is the deepest the schema cost is computed for.
	// Values nested deeper are refused (invalid_arguments) for the tools
	// whose cost still grows at that depth (recursive schemas); for the
	// others deeper levels cost nothing more.
	MaxArgumentDepth = 64
	// MaxValidationWork bounds the checks of validating one value in all:
	// a value of n places is refused (invalid_arguments, or a broken
	// protocol for a result) when n times the schema's cost is more. A
	// check takes about 2 µs, so a validation about 2 s at most; a tool
	// of cost 10 takes arguments of 100,000 values.
	MaxValidationWork = 1_000_000
	// MaxPatternBytes is the longest regular expression a schema's
	// pattern, patternProperties or a format "regex" value may be.
	MaxPatternBytes = 4 << 10
	// MaxPatternInsts is the largest program a pattern may compile to.
	// Go's regexp matches in time proportional to the program times the
	// string (a 60 KB pattern of 30,000 optional characters took 8 s for
	// a 20 KB string); real patterns compile to tens of instructions.
	MaxPatternInsts = 1000
	// MaxPatternWork bounds the matching of one validation: the bytes of
	// the value's strings (keys included) times the most pattern
	// instructions one place of the value may be matched against. At
	// about 10 ns an instruction and byte, a validation's patterns take
	// about 1 s at most.
	MaxPatternWork = 100_000_000
)

// maxCostWork bounds the bookkeeping of schemaCost itself (entries of its
// tables), so that computing the cost of a hostile schema is cheap too.
const maxCostWork = 1 << 16

// errSchemaTooComplex is a schema whose cost schemaCost gave up computing.
var errSchemaTooComplex = errors.New("its structure is too complex to bound what validating a value costs")

// jsonDepth is how deep v (a decoded JSON value) nests: 0 for a scalar, 1
// for an object or array of scalars, and so on. It stops counting past
// limit.
func jsonDepth(v any, limit int) int {
	if limit < 0 {
		return 0
	}
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			d = max(d, jsonDepth(x, limit-1))
			if d > limit {
				break
			}
		}
	case []any:
		for _, x := range v {
			d = max(d, jsonDepth(x, limit-1))
			if d > limit {
				break
			}
		}
	default:
		return 0
	}
	return d + 1
}

// checkSchema bounds a decoded schema before it is compiled: its size (of
// its compact JSON, n bytes) and its depth.
func checkSchema(n int, m map[string]any) error {
	if n > MaxSchemaBytes {
		return fmt.Errorf("it is %d bytes, over the %d KiB a tool's schema may be", n, MaxSchemaBytes>>10)
	}
	if jsonDepth(m, MaxSchemaDepth) > MaxSchemaDepth {
		return fmt.Errorf("it nests deeper than %d levels", MaxSchemaDepth)
	}
	return nil
}

// schemaCost is the most times validating one value against root checks
// one place of the value against a subschema (saturating just over
// MaxSchemaCost), for values nesting at most MaxArgumentDepth levels; deep
// reports whether the cost still grows at that depth, so that deeper
// values must be refused.
//
// It works on the compiled schema, whose references the library has
// resolved, so that it counts exactly what the validator walks. Each
// subschema's in-place work (itself, its $ref, $dynamicRef and
// $recursiveRef targets, allOf/anyOf/oneOf branches, not, if/then/else,
// dependent schemas) is summed with memoisation; what it applies to the
// places below (properties, items, ...) is grouped by place, since
// different properties are different places. A reference cycle that does
// not descend into the value is refused (the validator would loop on one
// place).
func schemaCost(root *jsonschema.Schema) (cost uint64, deep bool, err error) {
	return weightedCost(root, checkWeight, MaxSchemaCost+1)
}

// checkWeight is what checking a place against s alone costs: one check,
// and one more for each member of its enum (compared with the place one
// by one) and each name its required, dependentRequired and dependencies
// list (looked up in the place, and a missing one named in the error).
func checkWeight(s *jsonschema.Schema) uint64 {
	w := uint64(1)
	if s.Enum != nil {
		w += uint64(len(s.Enum.Values))
	}
	w += uint64(len(s.Required))
	for _, names := range s.DependentRequired {
		w += 1 + uint64(len(names))
	}
	for _, v := range s.Dependencies {
		w++
		if names, ok := v.([]string); ok {
			w += uint64(len(names))
		}
	}
	return w
}

// patternWeight is the pattern instructions checking a place against s
// alone matches a string with: its pattern's, and its patternProperties'
// (each matched against every key of an object).
func patternWeight(s *jsonschema.Schema) uint64 {
	var w uint64
	if r, ok := s.Pattern.(*boundedRegexp); ok {
		w += uint64(r.insts)
	}
	for re := range s.PatternProperties {
		if r, ok := re.(*boundedRegexp); ok {
			w += uint64(r.insts)
		}
	}
	return w
}

// weightedCost is schemaCost with each subschema's own check weighing
// weight(s) instead of one, saturating at limit.
func weightedCost(root *jsonschema.Schema, weight func(*jsonschema.Schema) uint64, limit uint64) (cost uint64, deep bool, err error) {
	c := &coster{
		weight: weight,
		limit:  limit,
		nodes:  map[*jsonschema.Schema]*costNode{},
		dyn:    map[string][]*jsonschema.Schema{},
	}
	if err := c.collect(root); err != nil {
		return 0, false, err
	}
	for _, n := range c.order {
		if err := c.inPlace(n); err != nil {
			return 0, false, err
		}
	}
	// f[n] is the most checks at one place at most d levels below a place
	// where n is checked once.
	f := make(map[*costNode]uint64, len(c.order))
	for _, n := range c.order {
		f[n] = n.ip
	}
	rootNode := c.nodes[root]
	for d := 1; d <= MaxArgumentDepth; d++ {
		next := make(map[*costNode]uint64, len(c.order))
		stable := true
		for _, n := range c.order {
			v := n.ip
			wild := c.sum(n.slots[slotAnyProperty], f)
			v = max(v, wild)
			for slot, ts := range n.slots {
				if slot == slotAnyProperty {
					continue
				}
				s := c.sum(ts, f)
				if slot != slotItems && slot != slotContent {
					s = c.add(s, wild) // a named property also gets the patterns'
				}
				v = max(v, s)
			}
			next[n] = v
			if v != f[n] {
				stable = false
			}
		}
		f = next
		if stable {
			return f[rootNode], false, nil
		}
		if f[rootNode] >= c.limit {
			return c.limit, true, nil
		}
	}
	return f[rootNode], true, nil
}

// The places below a value a subschema applies to, besides properties by
// name ("p:" + name).
const (
	slotAnyProperty = "*" // patternProperties, additionalProperties, ...
	slotItems       = "i" // items, prefixItems, contains, ...
	slotContent     = "c" // contentSchema
)

type coster struct {
	weight func(*jsonschema.Schema) uint64
	limit  uint64
	nodes  map[*jsonschema.Schema]*costNode
	order  []*costNode
	dyn    map[string][]*jsonschema.Schema // $dynamicAnchor name -> schemas
	rec    []*jsonschema.Schema            // schemas with $recursiveAnchor
	work   int
}

type costNode struct {
	s       *jsonschema.Schema
	inplace []*jsonschema.Schema            // with repeats: each is checked at the same place
	own     map[string][]*jsonschema.Schema // applied to the places below
	state   uint8                           // 0 new, 1 being computed, 2 done
	ip      uint64                          // checks at its place, itself included
	slots   map[string]map[*costNode]uint64
}

func (c *coster) add(a, b uint64) uint64 { return min(a+b, c.limit) }

func (c *coster) mul(a, b uint64) uint64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a >= c.limit || b >= c.limit || a > c.limit/b {
		return c.limit
	}
	return min(a*b, c.limit)
}

func (c *coster) sum(ts map[*costNode]uint64, f map[*costNode]uint64) uint64 {
	var s uint64
	for t, m := range ts {
		s = c.add(s, c.mul(m, f[t]))
	}
	return s
}

func (c *coster) charge(n int) error {
	c.work += n
	if c.work > maxCostWork {
		return errSchemaTooComplex
	}
	return nil
}

// collect finds every subschema reachable from root, and the targets a
// dynamic reference may resolve to.
func (c *coster) collect(root *jsonschema.Schema) error {
	stack := []*jsonschema.Schema{root}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == nil || c.nodes[s] != nil {
			continue
		}
		if err := c.charge(1); err != nil {
			return err
		}
		n := &costNode{s: s, own: map[string][]*jsonschema.Schema{}}
		c.nodes[s] = n
		c.order = append(c.order, n)
		if s.DynamicAnchor != "" {
			c.dyn[s.DynamicAnchor] = append(c.dyn[s.DynamicAnchor], s)
		}
		if s.RecursiveAnchor {
			c.rec = append(c.rec, s)
		}
		addIn := func(ts ...*jsonschema.Schema) {
			for _, t := range ts {
				if t != nil {
					n.inplace = append(n.inplace, t)
					stack = append(stack, t)
				}
			}
		}
		addBelow := func(slot string, ts ...*jsonschema.Schema) {
			for _, t := range ts {
				if t != nil {
					n.own[slot] = append(n.own[slot], t)
					stack = append(stack, t)
				}
			}
		}
		addIn(s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else)
		if s.DynamicRef != nil {
			addIn(s.DynamicRef.Ref)
		}
		addIn(s.AllOf...)
		addIn(s.AnyOf...)
		addIn(s.OneOf...)
		for _, t := range s.DependentSchemas {
			addIn(t)
		}
		for _, v := range s.Dependencies {
			if t, ok := v.(*jsonschema.Schema); ok {
				addIn(t)
			}
		}
		for name, t := range s.Properties {
			addBelow("p:"+name, t)
		}
		for _, t := range s.PatternProperties {
			addBelow(slotAnyProperty, t)
		}
		addBelow(slotAnyProperty, schemaOf(s.AdditionalProperties), s.UnevaluatedProperties, s.PropertyNames)
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			addBelow(slotItems, items)
		case []*jsonschema.Schema:
			addBelow(slotItems, items...)
		}
		addBelow(slotItems, schemaOf(s.AdditionalItems), s.Items2020, s.Contains, s.UnevaluatedItems)
		addBelow(slotItems, s.PrefixItems...)
		addBelow(slotContent, s.ContentSchema)
	}
	// A dynamic reference may resolve to any schema of its anchor's name,
	// a recursive one to any schema with $recursiveAnchor.
	for _, n := range c.order {
		s := n.s
		if s.DynamicRef != nil && s.DynamicRef.Anchor != "" {
			n.inplace = append(n.inplace, c.dyn[s.DynamicRef.Anchor]...)
		}
		if s.RecursiveRef != nil {
			n.inplace = append(n.inplace, c.rec...)
		}
	}
	return nil
}

// schemaOf is v when it is a schema (additionalProperties and
// additionalItems may be booleans).
func schemaOf(v any) *jsonschema.Schema {
	s, _ := v.(*jsonschema.Schema)
	return s
}

// inPlace computes n's checks at its own place and, grouped by the place
// below, how many times each subschema is applied there.
func (c *coster) inPlace(n *costNode) error {
	switch n.state {
	case 2:
		return nil
	case 1:
		return fmt.Errorf("it refers to itself (%s) without descending into the value", n.s.Location)
	}
	n.state = 1
	n.ip = min(c.weight(n.s), c.limit)
	n.slots = map[string]map[*costNode]uint64{}
	for slot, ts := range n.own {
		m := n.slots[slot]
		if m == nil {
			m = map[*costNode]uint64{}
			n.slots[slot] = m
		}
		for _, t := range ts {
			m[c.nodes[t]] = c.add(m[c.nodes[t]], 1)
		}
		if err := c.charge(len(ts)); err != nil {
			return err
		}
	}
	for _, t := range n.inplace {
		u := c.nodes[t]
		if err := c.inPlace(u); err != nil {
			return err
		}
		n.ip = c.add(n.ip, u.ip)
		for slot, ts := range u.slots {
			m := n.slots[slot]
			if m == nil {
				m = map[*costNode]uint64{}
				n.slots[slot] = m
			}
			for t, k := range ts {
				m[t] = c.add(m[t], k)
			}
			if err := c.charge(len(ts)); err != nil {
				return err
			}
		}
	}
	n.state = 2
	return nil
}

// validator checks values against a compiled schema within its bounds.
type validator struct {
	schema  *jsonschema.Schema
	cost    uint64 // schemaCost
	pattern uint64 // the most pattern instructions a place is matched against
	deep    bool   // values nesting deeper than MaxArgumentDepth are refused
	size    int    // the schema's compact JSON, in bytes
}

// newValidator compiles a checked schema and bounds its cost.
func newValidator(sch *jsonschema.Schema) (*validator, error) {
	cost, deep, err := schemaCost(sch)
	if err != nil {
		return nil, err
	}
	if cost > MaxSchemaCost {
		return nil, fmt.Errorf("validating one value could take more than %d checks against its subschemas and enum members, over the budget specloop allows (its oneOf/anyOf/allOf branches multiply along $ref chains)", MaxSchemaCost)
	}
	pattern, pdeep, err := weightedCost(sch, patternWeight, MaxPatternWork+1)
	if err != nil {
		return nil, err
	}
	if pattern > MaxPatternWork/1024 {
		return nil, fmt.Errorf("its patterns could match one string with more than %d regular expression instructions, over the budget specloop allows", MaxPatternWork/1024)
	}
	return &validator{schema: sch, cost: max(cost, 1), pattern: pattern, deep: deep || pdeep}, nil
}

// boundedRegexp is a compiled pattern and the size of its program.
type boundedRegexp struct {
	*regexp.Regexp
	insts int
}

// compilePattern is the schemas' regular expression engine (pattern,
// patternProperties and format "regex"): Go's regexp, for patterns of at
// most MaxPatternBytes that compile to at most MaxPatternInsts
// instructions.
func compilePattern(s string) (jsonschema.Regexp, error) {
	if len(s) > MaxPatternBytes {
		return nil, fmt.Errorf("a pattern of %d bytes is longer than the %d KiB specloop compiles", len(s), MaxPatternBytes>>10)
	}
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		// Its text quotes the pattern (the server's, up to the cap): the
		// code alone says what is wrong.
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not a valid regular expression: %s", se.Code)
		}
		return nil, errors.New("not a valid regular expression")
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > MaxPatternInsts {
		return nil, fmt.Errorf("a pattern compiles to %d instructions, more than the %d specloop matches with", len(prog.Inst), MaxPatternInsts)
	}
	r, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	return &boundedRegexp{Regexp: r, insts: len(prog.Inst)}, nil
}

// stringBytes is the bytes of the strings in v, its keys included, and
// one more for each (matching the empty string takes a step too),
// stopping past limit.
func stringBytes(v any, limit int) int {
	return tally(v, limit, func(x any) int {
		if s, ok := x.(string); ok {
			return len(s) + 1
		}
		return 0
	}, func(k string) int { return len(k) + 1 })
}

// tally walks v (v itself, and every member and item within), adding
// value(x) for each value x and key(k) for each object key, and stops
// past limit.
func tally(v any, limit int, value func(any) int, key func(string) int) int {
	n := value(v)
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if n > limit {
				break
			}
			n += key(k)
			n += tally(x, limit-n, value, key)
		}
	case []any:
		for _, x := range v {
			if n > limit {
				break
			}
			n += tally(x, limit-n, value, key)
		}
	}
	return n
}

// errTooDeep is a value nesting deeper than a recursive schema is checked
// for.
var errTooDeep = fmt.Errorf("the value nests deeper than %d levels, more than this tool's recursive schema is checked for", MaxArgumentDepth)

// errTooMuchWork is a value with too many places for a schema's cost.
var errTooMuchWork = errors.New("too many values to check")

// countValues counts the values in v (v itself, and every member and item
// within), stopping past limit.
func countValues(v any, limit int) int {
	return tally(v, limit, func(any) int { return 1 }, func(string) int { return 0 })
}

// runValidate is the validation itself; tests replace it.
var runValidate = func(s *jsonschema.Schema, v any) error { return s.Validate(v) }

// validate checks v, returning ctx's error as soon as ctx is done. The
// validation cannot be interrupted, but its work is bounded (the schema's
// cost times the values in v, at most MaxValidationWork), so a validation
// left behind ends soon after.
func (vd *validator) validate(ctx context.Context, v any) error {
	if vd.deep && jsonDepth(v, MaxArgumentDepth+1) > MaxArgumentDepth {
		return errTooDeep
	}
	if limit := int(MaxValidationWork / vd.cost); countValues(v, limit) > limit {
		return fmt.Errorf("%w: it holds more than %d values, which with this tool's schema (%d checks a value) is more than the %d checks specloop spends on one value",
			errTooMuchWork, limit, vd.cost, MaxValidationWork)
	}
	if vd.pattern > 0 {
		if limit := int(MaxPatternWork / vd.pattern); stringBytes(v, limit) > limit {
			return fmt.Errorf("%w: its strings hold more than %d bytes, which with this tool's patterns (%d instructions a string) is more than the %d specloop matches for one value",
				errTooMuchWork, limit, vd.pattern, MaxPatternWork)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- runValidate(vd.schema, v) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
