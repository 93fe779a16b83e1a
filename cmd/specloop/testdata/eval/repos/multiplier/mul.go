package multiplier

// Mul returns a times b.
func Mul(a, b int) int { return a + b }
