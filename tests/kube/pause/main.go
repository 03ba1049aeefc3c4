// The pod sandbox's holder (containerd's sandbox_image) for gospan's Kubernetes test,
// tests/kube/run.py: stays alive, reaps children, exits on INT/TERM. No registry is reachable
// here, so registry.k8s.io/pause cannot be pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range ch {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
