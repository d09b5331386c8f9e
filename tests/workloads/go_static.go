// go_static.go — a Go service as they ship: built with CGO_ENABLED=0, a static binary that maps
// no libc (tests/e2e/t_static.sh). Four goroutines take one sync.Mutex in handle() and hold it
// while they burn a little CPU, then sleep; runs until killed. Built by the test (go build), not
// by the Makefile.
package main

import (
	"sync"
	"time"
)

var mu sync.Mutex
var total uint64

func handle(n uint64) {
	mu.Lock()
	for i := uint64(0); i < 200000; i++ {
		total += i ^ n
	}
	mu.Unlock()
}

func main() {
	for w := 0; w < 4; w++ {
		go func(w uint64) {
			for n := uint64(0); ; n++ {
				handle(n + w)
				time.Sleep(time.Millisecond)
			}
		}(uint64(w))
	}
	select {}
}
