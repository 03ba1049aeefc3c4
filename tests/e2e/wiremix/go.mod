module example.com/gospan/tests/e2e/wiremix

go 1.24
