module example.com/gospan/testdata/httpserver

go 1.17
