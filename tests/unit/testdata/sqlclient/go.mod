module example.com/gospan/testdata/sqlclient

go 1.17
