module example.com/gospan/testdata/withdeps

go 1.17

require example.com/gospan/testdata/greet v1.2.3

replace example.com/gospan/testdata/greet => ./greet
