package load

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// NewHandler serves:
//
//	/cpu/start?workers=N   N busy goroutines (default 1)
//	/cpu/stop
//	/memory/start?mb=N     hold N MiB (default 100)
//	/memory/stop
//	/status, /healthz
//
// Every answer but /healthz is the resulting Status as JSON. Any method is accepted so that
// curl, wget and probes all work without flags.
func NewHandler(g *Generator) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/cpu/start", func(w http.ResponseWriter, r *http.Request) {
		n, err := intParam(r, "workers", 1)
		if err == nil {
			err = g.SetCPU(n)
		}
		answer(w, g, err)
	})
	mux.HandleFunc("/cpu/stop", func(w http.ResponseWriter, _ *http.Request) { answer(w, g, g.SetCPU(0)) })
	mux.HandleFunc("/memory/start", func(w http.ResponseWriter, r *http.Request) {
		n, err := intParam(r, "mb", 100)
		if err == nil {
			err = g.SetMemory(n)
		}
		answer(w, g, err)
	})
	mux.HandleFunc("/memory/stop", func(w http.ResponseWriter, _ *http.Request) { answer(w, g, g.SetMemory(0)) })
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) { answer(w, g, nil) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

func intParam(r *http.Request, name string, def int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a number", name, s)
	}
	return n, nil
}

func answer(w http.ResponseWriter, g *Generator, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(g.Status())
}
