package tools

import (
	"context"
	"math"
	"strconv"

	"github.com/specloop/specloop/gen"
)

var calculatorHandler = Func(NeedsNothing, calculate, func(_ *gen.CalculatorInput, out *gen.CalculatorResult) string {
	return strconv.FormatFloat(out.Value, 'g', -1, 64)
})

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
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, Errorf(gen.ErrorCodeNonFiniteResult, "the result is not a finite number")
	}
	return &gen.CalculatorResult{Value: v}, nil
}
