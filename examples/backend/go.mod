module gospan.example/backend

go 1.22
