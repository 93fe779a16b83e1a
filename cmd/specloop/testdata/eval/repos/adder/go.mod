module adder

go 1.26
