// consumer processes the order events the backend example publishes to Kafka (its -kafka flag):
// a segmentio/kafka-go Reader in a consumer group hands it one order at a time, and for each it
// asks the inventory example over gRPC whether the item is in stock, then commits the message.
// gospan makes a CONSUMER span of each order ("process orders"), the child of the backend's
// PRODUCER span whose traceparent the record carries, and the inventory call its child: the
// request that made the order and its processing are one trace.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"gospan.example/inventory/inventorypb"
)

const (
	// setupTimeout bounds how long the consumer waits at start for the broker, which may come
	// up after it (docker compose restarts it otherwise).
	setupTimeout = 30 * time.Second
	callTimeout  = 5 * time.Second
)

// order is the backend's order event (examples/backend/orders.go); fields it does not know are
// ignored.
type order struct {
	Order string `json:"order"`
	Item  string `json:"item"`
	Name  string `json:"name"`
}

type app struct {
	reader    *kafka.Reader
	inventory inventorypb.InventoryClient
	poll      time.Duration
}

// run hands over one message at a time until CTX ends: each is processed, then committed, so
// an order the consumer stopped in the middle of is processed again after a restart (at least
// once). A fetch waits at most a.poll, then the loop starts another: a tracer that attaches while
// the consumer waits (gospan) sees the next fetch from its start and so every message from then
// on, where a fetch already waiting when it attached would hand its message over unseen.
func (a *app) run(ctx context.Context) error {
	for {
		fctx, cancel := context.WithTimeout(ctx, a.poll)
		m, err := a.reader.FetchMessage(fctx)
		cancel()
		switch {
		case ctx.Err() != nil || errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			continue
		case err != nil:
			log.Printf("consumer: cannot fetch an order: %v", err)
			time.Sleep(500 * time.Millisecond)
			continue
		}
		a.process(ctx, m)
		// With a GroupID, a commit goes to the broker before it returns (no CommitInterval).
		if err := a.reader.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
			log.Printf("consumer: cannot commit offset %d of partition %d: %v", m.Offset,
				m.Partition, err)
		}
	}
}

// process checks the stock of the ordered item. A check that fails is logged, and the order
// committed all the same: a real service would try again or set the order aside.
func (a *app) process(ctx context.Context, m kafka.Message) {
	var o order
	if err := json.Unmarshal(m.Value, &o); err != nil || o.Item == "" {
		log.Printf("consumer: partition %d offset %d is not an order event: %q", m.Partition,
			m.Offset, m.Value)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	it, err := a.inventory.GetItem(cctx, &inventorypb.GetItemRequest{Id: o.Item})
	switch status.Code(err) {
	case codes.OK:
		log.Printf("consumer: order %s, item %s (%s): %d in stock", o.Order, o.Item,
			it.GetName(), it.GetQuantity())
	case codes.NotFound:
		log.Printf("consumer: order %s, item %s: not in the inventory", o.Order, o.Item)
	default:
		log.Printf("consumer: order %s, item %s: cannot check the stock: %v", o.Order, o.Item,
			err)
	}
}

// ensureTopic makes TOPIC when it is missing (the broker's default partitions and replication),
// as the backend does, so that the group has partitions to share whichever starts first;
// retried for up to setupTimeout while the broker is not up yet.
func ensureTopic(brokers []string, topic string) error {
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	deadline := time.Now().Add(setupTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
			Topic: topic, NumPartitions: -1, ReplicationFactor: -1}}})
		cancel()
		if err == nil {
			err = resp.Errors[topic]
			if err == nil || errors.Is(err, kafka.TopicAlreadyExists) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot make the topic '%s' on Kafka at '%s': %w", topic,
				strings.Join(brokers, ","), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func main() {
	brokersFlag := flag.String("kafka", os.Getenv("KAFKA_BROKERS"),
		"Kafka brokers, HOST:PORT,... (default: $KAFKA_BROKERS)")
	topic := flag.String("topic", "orders", "the topic of the order events")
	group := flag.String("group", "order-processor", "the consumer group")
	inventory := flag.String("inventory", "127.0.0.1:9090",
		"HOST:PORT of the inventory gRPC service, asked for each order's item")
	poll := flag.Duration("poll", time.Second, "how long one fetch waits for a message before "+
		"the loop starts the next")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	var brokers []string
	for _, b := range strings.Split(*brokersFlag, ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	switch {
	case len(brokers) == 0:
		log.Fatalf("consumer: no Kafka broker: give -kafka HOST:PORT or set KAFKA_BROKERS")
	case *poll <= 0:
		log.Fatalf("consumer: -poll %v is not a positive duration", *poll)
	}
	if err := ensureTopic(brokers, *topic); err != nil {
		log.Fatalf("consumer: %v", err)
	}

	// One connection for every call; grpc.NewClient connects on the first call and reconnects
	// by itself, so the inventory may start after the consumer.
	conn, err := grpc.NewClient(*inventory,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("consumer: cannot set up a gRPC connection to '%s': %v", *inventory, err)
	}
	defer conn.Close()

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: brokers,
		GroupID: *group,
		Topic:   *topic,
		// A group new to the topic starts at its first message: no order made before the
		// consumer first ran is left out.
		StartOffset: kafka.FirstOffset,
		// A fetch from the broker waits at most 500 ms for data (the default 10 s makes a
		// shutdown slow), and a failed join is tried again after 500 ms, not 5 s.
		MaxWait:          500 * time.Millisecond,
		JoinGroupBackoff: 500 * time.Millisecond,
	})
	a := &app{reader: r, inventory: inventorypb.NewInventoryClient(conn), poll: *poll}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Printed once the reader is made, as the other examples print their address.
	fmt.Printf("consuming '%s' at %s as the group '%s'\n", *topic, strings.Join(brokers, ","),
		*group)
	err = a.run(ctx)
	// Close leaves the group, so that the partitions go to another member at once.
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Fatalf("consumer: %v", err)
	}
}
