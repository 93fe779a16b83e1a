package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
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
	// pattern or patternProperties may be.
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
// It works on the decoded schema, following its references ($ref by JSON
// pointer or anchor, $dynamicRef to every schema of its anchor) as the
// validator does, so that it counts what the validator walks. Each
// subschema's in-place work (itself, its reference targets,
// allOf/anyOf/oneOf branches, not, if/then/else, dependent schemas) is
// summed with memoisation; what it applies to the places below
// (properties, items, ...) is grouped by place, since different
// properties are different places. A reference cycle that does not
// descend into the value is refused (the validator would loop on one
// place), and so is a reference the cost cannot follow (another document,
// or a base URI set by $id).
func schemaCost(root map[string]any) (cost uint64, deep bool, err error) {
	return weightedCost(root, checkWeight, MaxSchemaCost+1)
}

// checkWeight is what checking a place against s alone costs: one check,
// and one more for each member of its enum (compared with the place one
// by one) and each name its required, dependentRequired and dependencies
// list (looked up in the place, and a missing one named in the error).
func checkWeight(s map[string]any) uint64 {
	w := uint64(1)
	if enum, ok := s["enum"].([]any); ok {
		w += uint64(len(enum))
	}
	if req, ok := s["required"].([]any); ok {
		w += uint64(len(req))
	}
	for _, k := range []string{"dependentRequired", "dependencies"} {
		deps, _ := s[k].(map[string]any)
		for _, v := range deps {
			w++
			if names, ok := v.([]any); ok {
				w += uint64(len(names))
			}
		}
	}
	return w
}

// patternWeight is the pattern instructions checking a place against s
// alone matches a string with: its pattern's, and its patternProperties'
// (each matched against every key of an object), as checkPatterns
// counted them.
func patternWeight(insts map[string]int) func(map[string]any) uint64 {
	return func(s map[string]any) uint64 {
		var w uint64
		if p, ok := s["pattern"].(string); ok {
			w += uint64(insts[p])
		}
		pp, _ := s["patternProperties"].(map[string]any)
		for p := range pp {
			w += uint64(insts[p])
		}
		return w
	}
}

// checkPatterns bounds every regular expression of a schema (pattern and
// patternProperties) before the library compiles it, naming the place of
// the first one out of bounds, and returns the instructions of each.
func checkPatterns(root any) (map[string]int, error) {
	insts := map[string]int{}
	var walk func(v any, at string) error
	try := func(p, at string) error {
		if _, done := insts[p]; done {
			return nil
		}
		n, err := compilePattern(p)
		if err != nil {
			return fmt.Errorf("the pattern at %s: %w", at, err)
		}
		insts[p] = n
		return nil
	}
	walk = func(v any, at string) error {
		switch v := v.(type) {
		case []any:
			for i, x := range v {
				if err := walk(x, at+"/"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				here := at + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
				if p, ok := v[k].(string); ok && k == "pattern" {
					if err := try(p, here); err != nil {
						return err
					}
				}
				if pp, ok := v[k].(map[string]any); ok && k == "patternProperties" {
					for _, p := range slices.Sorted(maps.Keys(pp)) {
						if err := try(p, here); err != nil {
							return err
						}
					}
				}
				if err := walk(v[k], here); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return insts, walk(root, "")
}

// weightedCost is schemaCost with each subschema's own check weighing
// weight(s) instead of one, saturating at limit.
func weightedCost(root map[string]any, weight func(map[string]any) uint64, limit uint64) (cost uint64, deep bool, err error) {
	c := &coster{
		root:   root,
		weight: weight,
		limit:  limit,
		nodes:  map[uintptr]*costNode{},
	}
	rootNode, err := c.collect(root)
	if err != nil {
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
				if slot != slotItems {
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
)

type coster struct {
	root    map[string]any
	weight  func(map[string]any) uint64
	limit   uint64
	nodes   map[uintptr]*costNode
	order   []*costNode
	anchors map[string][]*costNode // "$anchor" or "$dynamicAnchor" name -> schemas
	dyn     map[string][]*costNode // "$dynamicAnchor" name -> schemas
	work    int
	queue   []*costNode // nodes whose subschemas are still to be read
}

type costNode struct {
	s       map[string]any
	at      string                 // the JSON pointer it was first found at
	inplace []*costNode            // with repeats: each is checked at the same place
	own     map[string][]*costNode // applied to the places below
	state   uint8                  // 0 new, 1 being computed, 2 done
	ip      uint64                 // checks at its place, itself included
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

// node returns the node of subschema v (nil for a boolean schema, which
// costs nothing), creating it and queueing it to be read.
func (c *coster) node(v any, at string) (*costNode, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil
	}
	k := reflect.ValueOf(m).Pointer()
	if n := c.nodes[k]; n != nil {
		return n, nil
	}
	if err := c.charge(1); err != nil {
		return nil, err
	}
	n := &costNode{s: m, at: at, own: map[string][]*costNode{}}
	c.nodes[k] = n
	c.order = append(c.order, n)
	c.queue = append(c.queue, n)
	return n, nil
}

// collect finds every subschema reachable from root, and the targets each
// reference may resolve to.
func (c *coster) collect(root map[string]any) (*costNode, error) {
	if err := c.indexAnchors(root, ""); err != nil {
		return nil, err
	}
	rootNode, err := c.node(root, "")
	if err != nil {
		return nil, err
	}
	for len(c.queue) > 0 {
		n := c.queue[len(c.queue)-1]
		c.queue = c.queue[:len(c.queue)-1]
		s := n.s
		var errs []error
		addIn := func(v any, at string) {
			t, err := c.node(v, at)
			if t != nil {
				n.inplace = append(n.inplace, t)
			}
			errs = append(errs, err)
		}
		addBelow := func(slot string, v any, at string) {
			t, err := c.node(v, at)
			if t != nil {
				n.own[slot] = append(n.own[slot], t)
			}
			errs = append(errs, err)
		}
		if ref, ok := s["$ref"].(string); ok {
			t, err := c.ref(ref)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where(n.at), err)
			}
			addIn(t, where(n.at)+"/$ref")
		}
		if ref, ok := s["$dynamicRef"].(string); ok {
			t, err := c.ref(ref)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where(n.at), err)
			}
			addIn(t, n.at+"/$dynamicRef")
			n.inplace = append(n.inplace, c.dyn[strings.TrimPrefix(ref, "#")]...)
		}
		for _, k := range []string{"not", "if", "then", "else"} {
			addIn(s[k], n.at+"/"+k)
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			list, _ := s[k].([]any)
			for i, t := range list {
				addIn(t, n.at+"/"+k+"/"+strconv.Itoa(i))
			}
		}
		for _, k := range []string{"dependentSchemas", "dependencies"} {
			deps, _ := s[k].(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(deps)) {
				addIn(deps[name], n.at+"/"+k+"/"+name)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			addBelow("p:"+name, props[name], n.at+"/properties/"+name)
		}
		pp, _ := s["patternProperties"].(map[string]any)
		for _, p := range slices.Sorted(maps.Keys(pp)) {
			addBelow(slotAnyProperty, pp[p], n.at+"/patternProperties/"+p)
		}
		for _, k := range []string{"additionalProperties", "unevaluatedProperties", "propertyNames"} {
			addBelow(slotAnyProperty, s[k], n.at+"/"+k)
		}
		for _, k := range []string{"items", "prefixItems"} {
			list, _ := s[k].([]any)
			for i, t := range list {
				addBelow(slotItems, t, n.at+"/"+k+"/"+strconv.Itoa(i))
			}
		}
		for _, k := range []string{"items", "additionalItems", "contains", "unevaluatedItems"} {
			addBelow(slotItems, s[k], n.at+"/"+k)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return rootNode, nil
}

// where names a place of the schema in a message.
func where(at string) string {
	if at == "" {
		return "the schema's root"
	}
	return at
}

// indexAnchors records the schemas that carry $anchor or $dynamicAnchor,
// and refuses $id below the root: it moves the base of the references
// under it, which the cost does not follow.
func (c *coster) indexAnchors(v any, at string) error {
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			if err := c.indexAnchors(x, at+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case map[string]any:
		if c.anchors == nil {
			c.anchors, c.dyn = map[string][]*costNode{}, map[string][]*costNode{}
		}
		if _, ok := v["$id"].(string); ok && at != "" {
			return fmt.Errorf("%s sets $id: specloop bounds only schemas whose references are JSON pointers or anchors", at)
		}
		for _, k := range []string{"$anchor", "$dynamicAnchor"} {
			if name, ok := v[k].(string); ok {
				n, err := c.node(v, at)
				if err != nil {
					return err
				}
				c.anchors[name] = append(c.anchors[name], n)
				if k == "$dynamicAnchor" {
					c.dyn[name] = append(c.dyn[name], n)
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue // values, not schemas
			}
			if err := c.indexAnchors(v[k], at+"/"+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// ref returns what a reference names inside the schema.
func (c *coster) ref(ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("the reference %.100q leaves the schema: specloop bounds only references inside it", ref)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		if ns := c.anchors[frag]; len(ns) > 0 {
			return ns[0].s, nil
		}
		return nil, fmt.Errorf("the reference %.100q names no anchor of the schema", ref)
	}
	var at any = c.root
	if frag == "" {
		return at, nil
	}
	for tok := range strings.SplitSeq(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := at.(type) {
		case map[string]any:
			at = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				at = nil
			} else {
				at = x[i]
			}
		default:
			at = nil
		}
		if at == nil {
			return nil, fmt.Errorf("the reference %.100q names nothing in the schema", ref)
		}
	}
	return at, nil
}

// inPlace computes n's checks at its own place and, grouped by the place
// below, how many times each subschema is applied there.
func (c *coster) inPlace(n *costNode) error {
	switch n.state {
	case 2:
		return nil
	case 1:
		return fmt.Errorf("it refers to itself (%s) without descending into the value", where(n.at))
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
			m[t] = c.add(m[t], 1)
		}
		if err := c.charge(len(ts)); err != nil {
			return err
		}
	}
	for _, u := range n.inplace {
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
	schema  *schema.Validator
	root    map[string]any // the schema as the server sent it
	cost    uint64         // schemaCost
	pattern uint64         // the most pattern instructions a place is matched against
	deep    bool           // values nesting deeper than MaxArgumentDepth are refused
	size    int            // the schema's compact JSON, in bytes
}

// newValidator compiles a checked schema (through internal/schema, the
// one place specloop compiles schemas) after bounding its patterns and
// its cost.
func newValidator(root map[string]any) (*validator, error) {
	insts, err := checkPatterns(root)
	if err != nil {
		return nil, err
	}
	cost, deep, err := schemaCost(root)
	if err != nil {
		return nil, err
	}
	if cost > MaxSchemaCost {
		return nil, fmt.Errorf("validating one value could take more than %d checks against its subschemas and enum members, over the budget specloop allows (its oneOf/anyOf/allOf branches multiply along $ref chains)", MaxSchemaCost)
	}
	pattern, pdeep, err := weightedCost(root, patternWeight(insts), MaxPatternWork+1)
	if err != nil {
		return nil, err
	}
	if pattern > MaxPatternWork/1024 {
		return nil, fmt.Errorf("its patterns could match one string with more than %d regular expression instructions, over the budget specloop allows", MaxPatternWork/1024)
	}
	sv, err := schema.Compile(root, schema.Neither)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), "schema: ")
		return nil, fmt.Errorf("it is not a valid JSON Schema: %s", textclip.Clip(why, 300))
	}
	return &validator{schema: sv, root: root, cost: max(cost, 1), pattern: pattern, deep: deep || pdeep}, nil
}

// compilePattern checks a schema's regular expression (pattern or a
// patternProperties name) against the bounds and returns the
// instructions of its program: Go's regexp, which the validator uses,
// for patterns of at most MaxPatternBytes that compile to at most
// MaxPatternInsts instructions.
func compilePattern(s string) (int, error) {
	if len(s) > MaxPatternBytes {
		return 0, fmt.Errorf("a pattern of %d bytes is longer than the %d KiB specloop compiles", len(s), MaxPatternBytes>>10)
	}
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		// Its text quotes the pattern (the server's, up to the cap): the
		// code alone says what is wrong.
		var se *syntax.Error
		if errors.As(err, &se) {
			return 0, fmt.Errorf("not a valid regular expression: %s", se.Code)
		}
		return 0, errors.New("not a valid regular expression")
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	if len(prog.Inst) > MaxPatternInsts {
		return 0, fmt.Errorf("a pattern compiles to %d instructions, more than the %d specloop matches with", len(prog.Inst), MaxPatternInsts)
	}
	return len(prog.Inst), nil
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
var runValidate = func(s *schema.Validator, v any) error { return s.Validate(v) }

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
