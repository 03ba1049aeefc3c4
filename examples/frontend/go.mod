module gospan.example/frontend

go 1.22
