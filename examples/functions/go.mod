module gospan.example/functions

go 1.22
