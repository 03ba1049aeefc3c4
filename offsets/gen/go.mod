module gospan/offsets/gen

go 1.21
