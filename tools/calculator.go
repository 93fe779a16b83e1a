package tools

import (
	"context"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
)

var calculatorHandler = funcHandler[gen.CalculatorInput, gen.CalculatorResult]{
	need: NeedsNothing,
	fn:   calculate,
	render: func(_ *gen.CalculatorInput, out *gen.CalculatorResult) string {
		return strconv.FormatFloat(out.Value, 'g', -1, 64)
	},
	bind: bindCalculator,
	// calculate returns only finite values, which JSON holds exactly.
	data: func(out *gen.CalculatorResult) map[string]any { return map[string]any{"value": out.Value} },
}

// bindCalculator is schema.Bind for validated calculator arguments: JSON
// numbers and a valid UTF-8 string are copied as they are; anything else
// (a number of another Go type, an operand that is not finite) is left to
// schema.Bind.
func bindCalculator(args map[string]any, in *gen.CalculatorInput) bool {
	left, okL := args["left"].(float64)
	right, okR := args["right"].(float64)
	op, okOp := args["operation"].(string)
	if !okL || !okR || !okOp || !isFinite(left) || !isFinite(right) || !utf8.ValidString(op) {
		return false
	}
	*in = gen.CalculatorInput{Left: left, Operation: gen.CalculatorOperation(op), Right: right}
	return true
}

func isFinite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

func calculate(_ context.Context, _ *Env, in *gen.CalculatorInput) (*gen.CalculatorResult, error) {
	var v float64
	switch in.Operation {
	case gen.CalculatorOperationAdd:
		v = in.Left + in.Right
	case gen.CalculatorOperationSubtract:
		v = in.Left - in.Right
	case gen.CalculatorOperationMultiply:
		v = in.Left * in.Right
	case gen.CalculatorOperationDivide:
		if in.Right == 0 {
			return nil, Errorf(gen.ErrorCodeDivisionByZero, "division by zero")
		}
		v = in.Left / in.Right
	default:
		// Validation admits only the spec's enum values, so this is drift:
		// the spec gained an operation this handler does not implement.
		return nil, Errorf(gen.ErrorCodeUnsupportedOperation, "operation %q is unsupported by this handler", in.Operation)
	}
	if !isFinite(v) {
		return nil, Errorf(gen.ErrorCodeNonFiniteResult, "the result is not a finite number")
	}
	return &gen.CalculatorResult{Value: v}, nil
}
