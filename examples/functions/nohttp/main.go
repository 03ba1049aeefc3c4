// nohttp is a Go program without net/http: a worker loop calling main.step, for tracing plain
// functions in a binary that serves nothing (gospan --functions).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

//go:noinline
func step(i int, label string) int {
	return inner(i) + len(label)
}

//go:noinline
func inner(i int) int {
	return i * 2
}

func main() {
	every := flag.Duration("every", 20*time.Millisecond, "time between calls of step")
	flag.Parse()
	fmt.Println("ready")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
			step(i, "job")
		}
	}
}
