module multiplier

go 1.26
