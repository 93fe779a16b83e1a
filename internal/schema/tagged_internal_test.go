package schema

import (
	"encoding/json"
	"testing"

	"github.com/specloop/specloop/gen"
)

// The discriminated fast path gives the verdict the whole oneOf gives: for
// the spec's Action and HistoryItem, on values of each branch, broken
// ones and values of no branch.
func FuzzTaggedBranchesAgree(f *testing.F) {
	for _, s := range []string{
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1}}`,
		`{"type":"tool_call","tool_name":"calculator"}`,
		`{"type":"finish","answer":"done"}`,
		`{"type":"finish","answer":3}`,
		`{"type":"finish","answer":"x","extra":1}`,
		`{"type":"observation","tool_name":"t","content":"c","is_error":false}`,
		`{"type":"model_feedback","kind":"stuck_warning","message":"m"}`,
		`{"type":"nothing"}`,
		`{"tool_name":"calculator","arguments":{}}`,
		`[1,2]`, `"finish"`, `null`,
	} {
		f.Add(s)
	}
	doc, err := gen.SpecDoc()
	if err != nil {
		f.Fatal(err)
	}
	var cs []*compiled
	for _, name := range []string{"Action", "HistoryItem"} {
		c := &compiled{root: prepare(doc.Schemas[name], Neither).(map[string]any)}
		var err error
		if c.resolved, err = resolve(c.root); err != nil {
			f.Fatal(err)
		}
		if c.tag, c.branches = taggedBranches(c.root); c.branches == nil {
			f.Fatalf("%s takes no fast path", name)
		}
		cs = append(cs, c)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var v any
		if json.Unmarshal([]byte(text), &v) != nil {
			return
		}
		for _, c := range cs {
			whole := c.resolved.Validate(v) == nil
			fast := c.validate(v) == nil
			if whole != fast {
				t.Fatalf("%s: the whole oneOf says valid=%v, the tagged branch %v", text, whole, fast)
			}
		}
	})
}
