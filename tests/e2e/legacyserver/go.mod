module example.com/gospan/tests/e2e/legacyserver

go 1.17
