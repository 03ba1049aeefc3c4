module gospan.bench/spanpump

go 1.22
