package load

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// Limits keep a typo in a test from taking the node down with it.
const (
	MaxWorkers  = 64
	MaxMemoryMB = 8192
)

const (
	mib  = 1 << 20
	page = 4096
)

// Generator holds the current load. Set calls replace the level rather than add to it, so
// repeating a request is harmless and a test states the level it wants.
type Generator struct {
	mu      sync.Mutex
	workers []chan struct{} // one stop channel per busy goroutine
	wg      sync.WaitGroup
	memory  [][]byte // one MiB per element
}

// Status is the JSON body of /status.
type Status struct {
	CPUWorkers int `json:"cpuWorkers"`
	MemoryMB   int `json:"memoryMB"`
}

// SetCPU runs n goroutines that spin until stopped; 0 stops them all.
func (g *Generator) SetCPU(n int) error {
	if n < 0 || n > MaxWorkers {
		return fmt.Errorf("workers %d: want 0-%d", n, MaxWorkers)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.workers) < n {
		stop := make(chan struct{})
		g.workers = append(g.workers, stop)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			spin(stop)
		}()
	}
	for len(g.workers) > n {
		last := len(g.workers) - 1
		close(g.workers[last])
		g.workers = g.workers[:last]
	}
	return nil
}

// spin keeps one CPU busy; checking stop without blocking is what makes it a busy loop.
func spin(stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink.Store(x)
	}
}

// SetMemory holds mb MiB, every page written so the kernel really backs it (and a cgroup limit
// really counts it); 0 frees it all and returns it to the OS.
func (g *Generator) SetMemory(mb int) error {
	if mb < 0 || mb > MaxMemoryMB {
		return fmt.Errorf("mb %d: want 0-%d", mb, MaxMemoryMB)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.memory) < mb {
		b := make([]byte, mib)
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		g.memory = append(g.memory, b)
	}
	if len(g.memory) > mb {
		clear(g.memory[mb:])
		g.memory = g.memory[:mb:mb]
		// Without this the Go runtime keeps the freed heap and the container's usage stays up.
		debug.FreeOSMemory()
	}
	return nil
}

// Status reports the current load.
func (g *Generator) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Status{CPUWorkers: len(g.workers), MemoryMB: len(g.memory)}
}

// Stop ends all load and waits for the busy goroutines to return.
func (g *Generator) Stop() {
	_ = g.SetCPU(0)
	_ = g.SetMemory(0)
	g.wg.Wait()
}
