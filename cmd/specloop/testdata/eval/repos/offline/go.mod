module offline

go 1.26
