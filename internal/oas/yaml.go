package oas

import (
	"fmt"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// decode turns YAML (or JSON, which YAML reads) into the values
// encoding/json would give: maps with string keys, []any, string, float64,
// bool and nil. It works on yaml.Node, which is about twice as fast as
// decoding into an interface, and bounds what an alias may expand to.
func decode(data []byte) (any, error) {
	if len(data) > MaxSize {
		return nil, &Error{Problem: fmt.Sprintf("the document is larger than %d bytes", MaxSize)}
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, &Error{Problem: fmt.Sprintf("not YAML or JSON: %v", err)}
	}
	if n.Kind == 0 {
		return nil, &Error{Problem: "the document is empty"}
	}
	d := &decoder{}
	return d.value(&n, 0)
}

type decoder struct{ values int }

func (d *decoder) value(n *yaml.Node, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, &Error{Problem: fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
	}
	if d.values++; d.values > maxValues {
		return nil, &Error{Problem: fmt.Sprintf("the document expands to more than %d values (its aliases?)", maxValues)}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0], depth)
	case yaml.AliasNode:
		return d.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		list := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := d.value(c, depth+1)
			if err != nil {
				return nil, under(err, strconv.Itoa(i))
			}
			list[i] = v
		}
		return list, nil
	case yaml.MappingNode:
		return d.mapping(n, depth)
	}
	return scalar(n)
}

// mapping decodes a YAML mapping, whose keys must be scalars and unique.
// A merge key (<<) adds the keys of the mappings it names that the
// mapping does not have itself, as YAML says.
func (d *decoder) mapping(n *yaml.Node, depth int) (any, error) {
	m := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, &Error{Problem: fmt.Sprintf("line %d: a key that is not a string", k.Line)}
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if _, dup := m[k.Value]; dup {
			return nil, under(&Error{Problem: "the key is there twice"}, k.Value)
		}
		val, err := d.value(v, depth+1)
		if err != nil {
			return nil, under(err, k.Value)
		}
		m[k.Value] = val
	}
	for _, v := range merges {
		for v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		list := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			list = v.Content
		}
		for _, item := range list {
			merged, err := d.value(item, depth+1)
			if err != nil {
				return nil, under(err, "<<")
			}
			mm, ok := merged.(map[string]any)
			if !ok {
				return nil, under(&Error{Problem: "a merge key (<<) must name mappings"}, "<<")
			}
			for k, v := range mm {
				if _, ok := m[k]; !ok {
					m[k] = v
				}
			}
		}
	}
	return m, nil
}

// scalar decodes a YAML scalar by its resolved tag; a number is a
// float64 as in encoding/json, and one JSON cannot hold is refused.
func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		return n.Value[0] == 't' || n.Value[0] == 'T', nil
	case "!!int", "!!float":
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, &Error{Problem: fmt.Sprintf("line %d: %v", n.Line, err)}
			}
			switch v := v.(type) {
			case int:
				f = float64(v)
			case int64:
				f = float64(v)
			case uint64:
				f = float64(v)
			case float64:
				f = v
			default:
				return nil, &Error{Problem: fmt.Sprintf("line %d: %q is not a number", n.Line, n.Value)}
			}
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, &Error{Problem: fmt.Sprintf("line %d: %s is not a JSON number", n.Line, n.Value)}
		}
		return f, nil
	}
	return n.Value, nil
}
