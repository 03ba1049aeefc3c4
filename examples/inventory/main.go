// inventory is the gRPC service of gospan's examples: what a small shop has in stock, served
// with grpc-go and nothing else (no net/http server). The frontend example looks an item up here
// for each item it serves (its -inventory flag), so a trace goes HTTP -> gRPC.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gospan.example/inventory/inventorypb"
)

// catalog is the stock, fixed at start and only read afterwards, so handlers share it without a
// lock. The frontend's example ids (1, 2, 3 in the demo's load, 42 in docker-compose.yml) are
// all in it; any other id answers NotFound.
var catalog = map[string]*inventorypb.Item{}

func init() {
	for _, it := range []*inventorypb.Item{
		{Id: "1", Name: "espresso cup", Quantity: 24, PriceCents: 650},
		{Id: "2", Name: "milk jug", Quantity: 8, PriceCents: 1490},
		{Id: "3", Name: "burr grinder", Quantity: 3, PriceCents: 12900},
		{Id: "4", Name: "tamper", Quantity: 0, PriceCents: 2450},
		{Id: "5", Name: "paper filters (100)", Quantity: 120, PriceCents: 399},
		{Id: "6", Name: "pour-over kettle", Quantity: 5, PriceCents: 5900},
		{Id: "7", Name: "scale", Quantity: 0, PriceCents: 3200},
		{Id: "42", Name: "towel", Quantity: 42, PriceCents: 990},
	} {
		catalog[it.Id] = it
	}
}

type server struct {
	inventorypb.UnimplementedInventoryServer
}

func (server) GetItem(ctx context.Context,
	req *inventorypb.GetItemRequest) (*inventorypb.Item, error) {
	if req.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "inventory: the request has no item id")
	}
	it, ok := catalog[req.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "inventory: no item '%s'", req.GetId())
	}
	return it, nil
}

func (server) ListItems(req *inventorypb.ListItemsRequest,
	stream inventorypb.Inventory_ListItemsServer) error {
	ids := make([]string, 0, len(catalog))
	for id := range catalog {
		ids = append(ids, id)
	}
	// In id order, numbers as numbers: "42" after "7".
	sort.Slice(ids, func(i, j int) bool {
		if len(ids[i]) != len(ids[j]) {
			return len(ids[i]) < len(ids[j])
		}
		return ids[i] < ids[j]
	})
	for _, id := range ids {
		it := catalog[id]
		if req.GetInStockOnly() && it.GetQuantity() == 0 {
			continue
		}
		if err := stream.Send(it); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	addr := flag.String("addr", ":9090", "listen address (port 0 picks a free one)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("inventory: cannot listen on '%s': %v", *addr, err)
	}
	srv := grpc.NewServer()
	inventorypb.RegisterInventoryServer(srv, server{})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// Printed after Listen, so whoever waits for this line can connect at once.
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err = <-done:
	case <-ctx.Done():
		// GracefulStop lets running calls finish; a client holding a stream open must not
		// keep the process alive for ever.
		stopped := make(chan struct{})
		go func() { srv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			srv.Stop()
		}
		err = <-done
	}
	if err != nil {
		log.Fatalf("inventory: %v", err)
	}
}
