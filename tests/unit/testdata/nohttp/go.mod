module example.com/gospan/testdata/nohttp

go 1.17
