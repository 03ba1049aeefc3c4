module gospan.example/loadgen

go 1.22
