module example.com/gospan/testdata/greet

go 1.17
