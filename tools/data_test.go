package tools

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
)

// TestToDataIsTheResultsJSON: the data of an Observation is what the
// result's JSON says, for every shape a result may hold: unions keep their
// member, []byte is base64 text, times are RFC 3339, omitted fields are
// absent.
func TestToDataIsTheResultsJSON(t *testing.T) {
	t.Parallel()
	var member gen.ModelConfig
	if err := member.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: []string{"r"}}); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 11, 30, 9, 0, 0, 5, time.UTC)
	type result struct {
		Model   gen.ModelConfig `json:"model"`
		Bytes   []byte          `json:"bytes"`
		When    time.Time       `json:"when"`
		Skipped *int            `json:"skipped,omitempty"`
		Count   int             `json:"count"`
	}
	got, err := toData(&result{Model: member, Bytes: []byte("hi"), When: when, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model": map[string]any{"provider": "script", "responses": []any{"r"}},
		"bytes": "aGk=",
		"when":  "2026-11-30T09:00:00.000000005Z",
		"count": 3.0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestToDataMatchesEncodingJSON: what toData builds without encoding is
// what encoding the value and decoding the text gives, for the shapes it
// converts itself (plain) and for those it leaves to encoding/json.
func TestToDataMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	type inner struct {
		Name string   `json:"name"`
		Tags []string `json:"tags,omitempty"`
	}
	type plain struct {
		Count    int            `json:"count"`
		Big      int64          `json:"big"`
		Value    float64        `json:"value"`
		Flag     bool           `json:"flag,omitempty"`
		Note     string         `json:"note,omitempty"`
		Untagged string         // its Go name is its JSON name
		skipped  string         // unexported: not encoded
		Dash     string         `json:"-"`
		Inner    *inner         `json:"inner,omitempty"`
		Items    []inner        `json:"items"`
		Nil      []inner        `json:"nil"`
		Extra    map[string]any `json:"extra"`
		Any      any            `json:"any"`
		Op       gen.CalculatorOperation
	}
	type Embedded struct {
		Shared string `json:"shared"`
	}
	plains := []any{
		&plain{Count: 3, Big: 1<<60 + 1, Value: 0.1, Untagged: "u", skipped: "s", Dash: "d",
			Items: []inner{{Name: "a"}}, Extra: map[string]any{"k": []any{1.0, "x", nil, map[string]any{"n": true}}},
			Any: &inner{Name: "p", Tags: []string{"t"}}, Op: gen.CalculatorOperationMultiply},
		&plain{Flag: true, Note: "n", Inner: &inner{}, Extra: map[string]any{}},
		&struct {
			Value float64 `json:"value"`
		}{Value: 42},
	}
	others := []any{
		&struct {
			When time.Time `json:"when"` // encodes itself
		}{When: time.Unix(1, 5)},
		&struct{ Small uint8 }{Small: 200},
		&struct{ Ratio float32 }{Ratio: 0.1},
		&struct {
			Quoted int `json:"quoted,string"`
		}{Quoted: 1},
		&struct{ Invalid string }{Invalid: "bad \xff byte"},
		&struct{ Bytes []byte }{Bytes: []byte("hi")},
		&struct {
			Embedded
			Value float64 `json:"value"`
		}{Value: 1},
		&struct {
			A string `json:"B"`
			B string // the same name as A's
		}{A: "a"},
	}
	for i, v := range append(plains, others...) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, err := toData(v)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("value %d (-json +toData):\n%s", i, diff)
		}
		if _, err := direct(reflect.ValueOf(v)); (err == nil) != (i < len(plains)) {
			t.Errorf("value %d: direct's error is %v", i, err)
		}
	}
	if _, err := toData(&struct{ F float64 }{F: math.Inf(1)}); err == nil {
		t.Error("an infinite number: no error, want encoding/json's")
	}
}
