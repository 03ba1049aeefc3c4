module gospan.example/httpserver

go 1.22
