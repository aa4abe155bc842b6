package netns_test

import (
	"bufio"
	"net"
	"os"
	"testing"

	"minik8s.io/shared/netns"
	"minik8s.io/shared/netns/netnstest"
)

// A listener made in a namespace is reached by Dial into it and not from the caller's.
func TestListenAndDialInNamespace(t *testing.T) {
	path := netnstest.New(t)
	ln, err := netns.Listen(path, "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("inside\n"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	c, err := netns.Dial(t.Context(), path, "tcp4", addr)
	if err != nil {
		t.Fatalf("Dial into the namespace: %v", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || line != "inside\n" {
		t.Fatalf("read %q, %v; want inside", line, err)
	}
	if c, err := net.Dial("tcp4", addr); err == nil {
		c.Close()
		t.Errorf("dialled %s from the host: the listener should be only in the namespace", addr)
	}

	// Do switches back: the thread's namespace afterwards is the caller's.
	before, _ := os.Readlink("/proc/thread-self/ns/net")
	var inside string
	if err := netns.Do(path, func() error {
		var err error
		inside, err = os.Readlink("/proc/thread-self/ns/net")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if inside == before {
		t.Errorf("Do ran in the caller's namespace %s", before)
	}
	if err := netns.Do("/nonexistent/ns", func() error { return nil }); err == nil {
		t.Errorf("Do into a missing namespace succeeded")
	}
}
