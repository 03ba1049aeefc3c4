module gospan.bench/receiver

go 1.22
