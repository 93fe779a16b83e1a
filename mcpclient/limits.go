package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
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
	// shown; a longer one is clipped, with a marker saying so, and a
	// warning on Config.Stderr says which tools were.
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

// measured is how a decoded JSON value measures: how deep it nests (0 for
// a scalar, 1 for an object or array of scalars, and so on), its values
// (itself, and every member and item within) and the bytes of its
// strings, keys included, and one more for each (matching the empty
// string takes a step too).
type measured struct{ depth, values, bytes int }

// measure measures v in one walk, which stops descending past limit.depth
// and stops once its values or bytes are past limit's: a figure past its
// limit is only known to be over it.
func measure(v any, limit measured) measured {
	var n measured
	var walk func(v any, level int)
	walk = func(v any, level int) {
		n.values++
		switch v := v.(type) {
		case string:
			n.bytes += len(v) + 1
		case map[string]any:
			if n.depth = max(n.depth, level+1); level < limit.depth {
				for k, x := range v {
					if n.values > limit.values || n.bytes > limit.bytes {
						return
					}
					n.bytes += len(k) + 1
					walk(x, level+1)
				}
			}
		case []any:
			if n.depth = max(n.depth, level+1); level < limit.depth {
				for _, x := range v {
					if n.values > limit.values || n.bytes > limit.bytes {
						return
					}
					walk(x, level+1)
				}
			}
		}
	}
	walk(v, 0)
	return n
}

// unlimited measures a value whole.
var unlimited = measured{math.MaxInt, math.MaxInt, math.MaxInt}

// checkSchema bounds a decoded schema before it is compiled: its size (of
// its compact JSON, n bytes) and its depth.
func checkSchema(n int, m map[string]any) error {
	if n > MaxSchemaBytes {
		return fmt.Errorf("it is %d bytes, over the %d KiB a tool's schema may be", n, MaxSchemaBytes>>10)
	}
	if measure(m, measured{MaxSchemaDepth, math.MaxInt, math.MaxInt}).depth > MaxSchemaDepth {
		return fmt.Errorf("it nests deeper than %d levels", MaxSchemaDepth)
	}
	return nil
}

// costs are what checking one place of a value costs, in two measures:
// checks against subschemas (and their enum members and names), and the
// pattern instructions a string of the place is matched with.
type costs [2]uint64

// costLimits are where schemaCost stops counting each of its costs.
var costLimits = costs{MaxSchemaCost + 1, MaxPatternWork + 1}

// schemaCost is, in each of its measures, the most validating one value
// against root costs at one place of the value (saturating just over
// MaxSchemaCost and MaxPatternWork), for values nesting at most
// MaxArgumentDepth levels; deep reports whether a cost still grows at
// that depth, so that deeper values must be refused.
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
func schemaCost(root map[string]any) (cost costs, deep bool, err error) {
	c := &coster{root: root, insts: map[string]int{}, nodes: map[uintptr]*costNode{},
		anchors: map[string][]*costNode{}, dyn: map[string][]*costNode{}}
	rootNode, err := c.collect(root)
	if err != nil {
		return costs{}, false, err
	}
	for _, n := range c.order {
		if err := c.inPlace(n); err != nil {
			return costs{}, false, err
		}
	}
	// f[n] is the most cost at one place at most d levels below a place
	// where n is checked once.
	f := make(map[*costNode]costs, len(c.order))
	for _, n := range c.order {
		f[n] = n.ip
	}
	for d := 1; d <= MaxArgumentDepth; d++ {
		next := make(map[*costNode]costs, len(c.order))
		stable := true
		for _, n := range c.order {
			wild := c.sum(n.slots[slotAnyProperty], f)
			v := maxCosts(n.ip, wild)
			for slot, ts := range n.slots {
				if slot == slotAnyProperty {
					continue
				}
				s := c.sum(ts, f)
				if slot != slotItems {
					s = addCosts(s, wild) // a named property also gets the patterns'
				}
				v = maxCosts(v, s)
			}
			next[n] = v
			stable = stable && v == f[n]
		}
		f = next
		if stable {
			return f[rootNode], false, nil
		}
		if r := f[rootNode]; r[0] >= costLimits[0] || r[1] >= costLimits[1] {
			return r, true, nil
		}
	}
	return f[rootNode], true, nil
}

// weight is what checking a place against s alone costs. In checks: one,
// and one more for each member of its enum (compared with the place one
// by one) and each name its required, dependentRequired and dependencies
// list (looked up in the place, and a missing one named in the error). In
// pattern instructions: its pattern's, and its patternProperties' (each
// matched against every key of an object).
func (c *coster) weight(s map[string]any) costs {
	w := costs{1, 0}
	if enum, ok := s["enum"].([]any); ok {
		w[0] += uint64(len(enum))
	}
	if req, ok := s["required"].([]any); ok {
		w[0] += uint64(len(req))
	}
	for _, k := range []string{"dependentRequired", "dependencies"} {
		deps, _ := s[k].(map[string]any)
		for _, v := range deps {
			w[0]++
			if names, ok := v.([]any); ok {
				w[0] += uint64(len(names))
			}
		}
	}
	if p, ok := s["pattern"].(string); ok {
		w[1] += uint64(c.insts[p])
	}
	pp, _ := s["patternProperties"].(map[string]any)
	for p := range pp {
		w[1] += uint64(c.insts[p])
	}
	return minCosts(w, costLimits)
}

// The places below a value a subschema applies to, besides properties by
// name ("p:" + name).
const (
	slotAnyProperty = "*" // patternProperties, additionalProperties, ...
	slotItems       = "i" // items, prefixItems, contains, ...
)

type coster struct {
	root    map[string]any
	insts   map[string]int
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
	ip      costs                  // at its place, itself included
	slots   map[string]map[*costNode]uint64
}

// The sums and products of costs saturate at costLimits; a number of
// applications saturates at the larger limit, which saturates any
// product with it.
func addCosts(a, b costs) costs { return minCosts(costs{a[0] + b[0], a[1] + b[1]}, costLimits) }

func minCosts(a, b costs) costs { return costs{min(a[0], b[0]), min(a[1], b[1])} }

func maxCosts(a, b costs) costs { return costs{max(a[0], b[0]), max(a[1], b[1])} }

func addTimes(a, b uint64) uint64 { return min(a+b, costLimits[1]) }

func mulCosts(times uint64, f costs) costs {
	var out costs
	for i, v := range f {
		switch {
		case times == 0 || v == 0:
		case times >= costLimits[i] || v >= costLimits[i] || times > costLimits[i]/v:
			out[i] = costLimits[i]
		default:
			out[i] = min(times*v, costLimits[i])
		}
	}
	return out
}

func (c *coster) sum(ts map[*costNode]uint64, f map[*costNode]costs) costs {
	var s costs
	for t, m := range ts {
		s = addCosts(s, mulCosts(m, f[t]))
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
	if err := c.scan(root, "", false); err != nil {
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
				return nil, fmt.Errorf("%s: %w", schema.Where(n.at), err)
			}
			addIn(t, schema.Where(n.at)+"/$ref")
		}
		if ref, ok := s["$dynamicRef"].(string); ok {
			t, err := c.ref(ref)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", schema.Where(n.at), err)
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

// scan walks the whole schema once, before anything else reads it: it
// bounds every regular expression (pattern, and the names of
// patternProperties) before the library compiles it, naming the place of
// the first one out of bounds, and keeps the instructions of each; it
// records the schemas that carry $anchor or $dynamicAnchor; and it refuses
// $id below the root: it moves the base of the references under it, which
// the cost does not follow. Values (enum, const, default, examples) are
// searched for patterns only.
func (c *coster) scan(v any, at string, value bool) error {
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			if err := c.scan(x, at+"/"+strconv.Itoa(i), value); err != nil {
				return err
			}
		}
	case map[string]any:
		if _, ok := v["$id"].(string); ok && at != "" && !value {
			return fmt.Errorf("%s sets $id: specloop bounds only schemas whose references are JSON pointers or anchors", at)
		}
		for _, k := range []string{"$anchor", "$dynamicAnchor"} {
			if name, ok := v[k].(string); ok && !value {
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
			here := at + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			if p, ok := v[k].(string); ok && k == "pattern" {
				if err := c.pattern(p, here); err != nil {
					return err
				}
			}
			if pp, ok := v[k].(map[string]any); ok && k == "patternProperties" {
				for _, p := range slices.Sorted(maps.Keys(pp)) {
					if err := c.pattern(p, here); err != nil {
						return err
					}
				}
			}
			if err := c.scan(v[k], here, value || k == "enum" || k == "const" || k == "default" || k == "examples"); err != nil {
				return err
			}
		}
	}
	return nil
}

// pattern bounds a pattern of the schema, found at at, once.
func (c *coster) pattern(p, at string) error {
	if _, done := c.insts[p]; done {
		return nil
	}
	n, err := compilePattern(p)
	if err != nil {
		return fmt.Errorf("the pattern at %s: %w", at, err)
	}
	c.insts[p] = n
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
	at, ok := schema.Lookup(c.root, frag)
	if !ok || at == nil {
		return nil, fmt.Errorf("the reference %.100q names nothing in the schema", ref)
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
		return fmt.Errorf("it refers to itself (%s) without descending into the value", schema.Where(n.at))
	}
	n.state = 1
	n.ip = c.weight(n.s)
	n.slots = map[string]map[*costNode]uint64{}
	for slot, ts := range n.own {
		m := n.slots[slot]
		if m == nil {
			m = map[*costNode]uint64{}
			n.slots[slot] = m
		}
		for _, t := range ts {
			m[t] = addTimes(m[t], 1)
		}
		if err := c.charge(len(ts)); err != nil {
			return err
		}
	}
	for _, u := range n.inplace {
		if err := c.inPlace(u); err != nil {
			return err
		}
		n.ip = addCosts(n.ip, u.ip)
		for slot, ts := range u.slots {
			m := n.slots[slot]
			if m == nil {
				m = map[*costNode]uint64{}
				n.slots[slot] = m
			}
			for t, k := range ts {
				m[t] = addTimes(m[t], k)
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
	cost, deep, err := schemaCost(root)
	if err != nil {
		return nil, err
	}
	if cost[0] > MaxSchemaCost {
		return nil, fmt.Errorf("validating one value could take more than %d checks against its subschemas and enum members, over the budget specloop allows (its oneOf/anyOf/allOf branches multiply along $ref chains)", MaxSchemaCost)
	}
	if cost[1] > MaxPatternWork/1024 {
		return nil, fmt.Errorf("its patterns could match one string with more than %d regular expression instructions, over the budget specloop allows", MaxPatternWork/1024)
	}
	sv, err := schema.Compile(root, schema.Neither)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), "schema: ")
		return nil, fmt.Errorf("it is not a valid JSON Schema: %s", textclip.Clip(why, 300))
	}
	return &validator{schema: sv, root: root, cost: max(cost[0], 1), pattern: cost[1], deep: deep}, nil
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

// errTooDeep is a value nesting deeper than a recursive schema is checked
// for.
var errTooDeep = fmt.Errorf("the value nests deeper than %d levels, more than this tool's recursive schema is checked for", MaxArgumentDepth)

// errTooMuchWork is a value with too many places for a schema's cost.
var errTooMuchWork = errors.New("too many values to check")

// runValidate is the validation itself; tests replace it.
var runValidate = func(s *schema.Validator, v any) error { return s.Validate(v) }

// validate checks v, returning ctx's error as soon as ctx is done. The
// validation cannot be interrupted, but its work is bounded (the schema's
// cost times the values in v, at most MaxValidationWork), so a validation
// left behind ends soon after.
func (vd *validator) validate(ctx context.Context, v any) error {
	limit := unlimited
	limit.values = int(MaxValidationWork / vd.cost)
	if vd.deep {
		limit.depth = MaxArgumentDepth
	}
	if vd.pattern > 0 {
		limit.bytes = int(MaxPatternWork / vd.pattern)
	}
	switch n := measure(v, limit); {
	case n.depth > limit.depth:
		return errTooDeep
	case n.values > limit.values:
		return fmt.Errorf("%w: it holds more than %d values, which with this tool's schema (%d checks a value) is more than the %d checks specloop spends on one value",
			errTooMuchWork, limit.values, vd.cost, MaxValidationWork)
	case n.bytes > limit.bytes:
		return fmt.Errorf("%w: its strings hold more than %d bytes, which with this tool's patterns (%d instructions a string) is more than the %d specloop matches for one value",
			errTooMuchWork, limit.bytes, vd.pattern, MaxPatternWork)
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
