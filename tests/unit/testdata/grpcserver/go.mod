module example.com/gospan/testdata/grpcserver

go 1.21

require google.golang.org/grpc v1.50.0
