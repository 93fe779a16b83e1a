package tools

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// The calculator's typed binding and data are what schema.Bind and toData
// make through JSON, and it leaves to schema.Bind what it does not copy.
func TestCalculatorTypedBindingIsTheJSONOne(t *testing.T) {
	for _, args := range []map[string]any{
		{"left": 12.0, "operation": "multiply", "right": 7.0},
		{"left": math.Copysign(0, -1), "operation": "divide", "right": 1e-300, "extra": "ignored"},
		{"left": 1.7976931348623157e308, "operation": "add", "right": 5e-324},
	} {
		var fast, slow gen.CalculatorInput
		if !bindCalculator(args, &fast) {
			t.Fatalf("bindCalculator(%v) left it to schema.Bind", args)
		}
		if err := schema.Bind(args, &slow); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, slow) || math.Signbit(fast.Left) != math.Signbit(slow.Left) {
			t.Errorf("bindCalculator(%v) = %+v, schema.Bind %+v", args, fast, slow)
		}
		out, err := calculate(context.Background(), nil, &fast)
		if err != nil {
			continue
		}
		want, err := toData(out)
		if err != nil {
			t.Fatal(err)
		}
		if got := calculatorHandler.data(out); !reflect.DeepEqual(got, want) {
			t.Errorf("data(%+v) = %v, toData %v", out, got, want)
		}
	}
	for _, args := range []map[string]any{
		{"left": 3, "operation": "add", "right": 4.0},
		{"operation": "add", "right": 4.0},
		{"left": math.Inf(1), "operation": "add", "right": 4.0},
		{"left": 1.0, "operation": "add\xff", "right": 4.0},
	} {
		var in gen.CalculatorInput
		if bindCalculator(args, &in) {
			t.Errorf("bindCalculator(%v) copied what schema.Bind should bind", args)
		}
	}
}
