module gospan.example/consumer

go 1.26.0

require (
	github.com/segmentio/kafka-go v0.4.51
	google.golang.org/grpc v1.85.0
	gospan.example/inventory v0.0.0
)

require (
	github.com/klauspost/compress v1.15.9 // indirect
	github.com/pierrec/lz4/v4 v4.1.15 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// The inventory example's generated client, from this repository rather than a module proxy.
replace gospan.example/inventory => ../inventory
