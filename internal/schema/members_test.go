package schema_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// asMap turns members back into the map Decode produces.
func asMap(ms schema.Members) map[string]any {
	m := make(map[string]any, len(ms))
	for _, mb := range ms {
		m[mb.Key] = mb.Value
	}
	return m
}

func TestDecodeMembersAgreesWithDecode(t *testing.T) {
	inputs := append([]string{
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"b":1,"a":2,"c":{"a":1,"a":2}}`, `{} x`, `{"a":[{"b":{}}]}`,
		`{"k01":1,"k02":1,"k03":1,"k04":1,"k05":1,"k06":1,"k07":1,"k08":1,"k09":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k05":2}`,
	}, agreeing...)
	for _, in := range inputs {
		want, wantErr := schema.Decode([]byte(in))
		ms, v, err := schema.DecodeMembers(in, nil)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("DecodeMembers(%q) error = %v, Decode error = %v", in, err, wantErr)
			continue
		}
		if err != nil {
			if ms != nil || v != nil {
				t.Errorf("DecodeMembers(%q) = %v, %v with an error", in, ms, v)
			}
			continue
		}
		m, isObject := want.(map[string]any)
		if isObject != (ms != nil) {
			t.Errorf("DecodeMembers(%q) members %v for %T", in, ms, want)
			continue
		}
		got := v
		if isObject {
			if v != nil {
				t.Errorf("DecodeMembers(%q) value %v with members", in, v)
			}
			got = asMap(ms)
			if len(ms) != len(m) {
				t.Errorf("DecodeMembers(%q) has %d members, want %d", in, len(ms), len(m))
			}
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("DecodeMembers(%q) mismatch:\n%s", in, cmp.Diff(want, got))
		}
	}
}

func TestDecodeMembersOrderAndBuffer(t *testing.T) {
	buf := make(schema.Members, 0, 8)
	ms, _, err := schema.DecodeMembers(`{"z":1,"a":"x","m":{"k":true}}`, buf)
	if err != nil {
		t.Fatal(err)
	}
	want := schema.Members{{"z", 1.0}, {"a", "x"}, {"m", map[string]any{"k": true}}}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Fatalf("members (-want +got):\n%s", diff)
	}
	if &ms[0] != &buf[:1][0] {
		t.Error("the members are not in the buffer's memory")
	}
	if v, ok := ms.Get("a"); !ok || v != "x" {
		t.Errorf(`Get("a") = %v, %v`, v, ok)
	}
	if _, ok := ms.Get("A"); ok {
		t.Error(`Get("A") found a member`)
	}
	empty, v, err := schema.DecodeMembers(" {} ", buf[:0:0])
	if err != nil || empty == nil || len(empty) != 0 || v != nil {
		t.Errorf("DecodeMembers({}) = %#v, %v, %v; want empty non-nil members", empty, v, err)
	}
	ms, v, err = schema.DecodeMembers(`[{"a":1}]`, buf)
	if err != nil || ms != nil || !reflect.DeepEqual(v, []any{map[string]any{"a": 1.0}}) {
		t.Errorf("DecodeMembers of an array = %v, %v, %v", ms, v, err)
	}
}

// memberCases are the keyword cases whose value is an object, plus objects
// against schemas of the spec.
func memberCases(t *testing.T) []struct {
	v     *schema.Validator
	value string
} {
	var cases []struct {
		v     *schema.Validator
		value string
	}
	for _, tc := range keywordCases {
		if !strings.HasPrefix(strings.TrimSpace(tc.value), "{") {
			continue
		}
		v, err := compile(t, tc.schema)
		if err != nil {
			continue
		}
		cases = append(cases, struct {
			v     *schema.Validator
			value string
		}{v, tc.value})
	}
	for _, name := range []string{"Action", "HistoryItem", "CalculatorInput", "CreateRunRequest"} {
		v := mustCompile(t, name)
		for _, value := range []string{
			string(actionJSON), `{"type":"finish","answer":"x"}`, `{"type":"finish"}`, `{"type":"finish","answer":"x","extra":1}`,
			`{"type":"tool_call","tool_name":"","arguments":[]}`, `{"type":7}`, `{}`, `{"left":1,"right":2,"operation":"power"}`,
			`{"left":1,"right":2,"operation":"add"}`, `{"type":"observation","tool_name":"t","content":"c","is_error":false}`,
		} {
			cases = append(cases, struct {
				v     *schema.Validator
				value string
			}{v, value})
		}
	}
	return cases
}

func TestValidateMembersAgreesWithValidate(t *testing.T) {
	for _, tc := range memberCases(t) {
		value := mustDecode(t, tc.value)
		ms, _, err := schema.DecodeMembers(tc.value, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, got := errString(tc.v.Validate(value)), errString(tc.v.ValidateMembers(ms))
		if got != want {
			t.Errorf("value %s: ValidateMembers = %q, Validate = %q", tc.value, got, want)
		}
	}
}

func TestValidateMembersDoesNotAllocate(t *testing.T) {
	action := mustCompile(t, "Action")
	ms, _, err := schema.DecodeMembers(string(actionJSON), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = action.ValidateMembers(ms) }); n != 0 {
		t.Errorf("%v allocations per ValidateMembers", n)
	}
}

func TestBindMembers(t *testing.T) {
	in := `{"type":"tool_call","TOOL_NAME":"calculator","arguments":{"left":12},"call_id":"c1"}`
	value := mustDecode(t, in)
	ms, _, err := schema.DecodeMembers(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want, got gen.ToolCall
	if err := schema.Bind(value, &want); err != nil {
		t.Fatal(err)
	}
	if err := schema.BindMembers(ms, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("BindMembers differs from Bind (-Bind +BindMembers):\n%s", diff)
	}
	if got.ToolName != "calculator" || got.CallId == nil || *got.CallId != "c1" {
		t.Fatalf("BindMembers = %+v", got)
	}
	// The arguments map is the decoded one, as with Bind.
	args, _ := ms.Get("arguments")
	if reflect.ValueOf(got.Arguments).Pointer() != reflect.ValueOf(args).Pointer() {
		t.Error("BindMembers copied the arguments map")
	}

	bad, _, _ := schema.DecodeMembers(`{"tool_name":7}`, nil)
	err = schema.BindMembers(bad, &got)
	var e *schema.Error
	if !errors.As(err, &e) || e.Pointer != "/tool_name" {
		t.Errorf("BindMembers of a wrong type = %v", err)
	}
	var notStruct map[string]any
	if err := schema.BindMembers(ms, &notStruct); err == nil {
		t.Error("BindMembers into a map succeeded")
	}
	if err := schema.BindMembers(ms, got); err == nil {
		t.Error("BindMembers into a non-pointer succeeded")
	}
}

// FuzzValidateMembers: for any object, ValidateMembers and Validate give
// the same result.
func FuzzValidateMembers(f *testing.F) {
	f.Add(string(actionJSON))
	f.Add(`{"type":"finish","answer":"x","answer":"y"}`)
	f.Add(`{"type":"tool_call","tool_name":"","arguments":[],"extra":1}`)
	f.Add(`{"task":{"prompt":"p"},"model":{"provider":"openai","model":"m","temperature":2}}`)
	var validators []*schema.Validator
	for _, name := range []string{"Action", "HistoryItem", "CreateRunRequest", "CalculatorInput"} {
		validators = append(validators, mustCompile(f, name))
	}
	f.Fuzz(func(t *testing.T, in string) {
		ms, _, err := schema.DecodeMembers(in, nil)
		if err != nil || ms == nil {
			return
		}
		value := mustDecode(t, in)
		for _, v := range validators {
			if want, got := errString(v.Validate(value)), errString(v.ValidateMembers(ms)); got != want {
				t.Fatalf("ValidateMembers = %q, Validate = %q", got, want)
			}
		}
	})
}

// Decoding an action allocates only the arguments map (a map is two
// allocations): the action object is members in a reused buffer, and its
// short strings and small numbers come from shared boxes.
func TestDecodeMembersAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop decoders")
	}
	buf := make(schema.Members, 0, 8)
	in := string(actionJSON)
	if n := testing.AllocsPerRun(100, func() {
		if _, _, err := schema.DecodeMembers(in, buf); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("%v allocations per DecodeMembers of an action, want 2", n)
	}
}

// Shared boxes never mix values up, however the strings collide.
func TestDecodeBoxedValues(t *testing.T) {
	var b strings.Builder
	var want []any
	b.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		s := strings.Repeat(string(rune('a'+i%26)), 1+i%30) + string(rune('A'+i/26%26))
		want = append(want, s, float64(i%1100), -float64(i%3))
		b.WriteString(`"` + s + `",` + formatFloat(float64(i%1100)) + `,` + formatFloat(-float64(i%3)))
	}
	b.WriteString("]")
	for range 2 { // the second time from the boxes
		got, err := schema.Decode([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	}
}
