module example.com/gospan/tests/e2e/h2server

go 1.17
