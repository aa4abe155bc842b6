package web

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"minik8s.io/dashboard/internal/prom"
)

// Metrics is the part of Prometheus' API the dashboard uses.
type Metrics interface {
	Query(ctx context.Context, q string) ([]prom.Sample, error)
	QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]prom.Series, error)
}

// Config is what a Server reads from and how it renders.
type Config struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Metrics Metrics
	// ChartJS is the path of Chart.js' minified build, served as /static/chart.min.js.
	ChartJS string
	// Refresh is how often a page reloads its tables and plots.
	Refresh time.Duration
	// Window is how far back plots reach, and Step their resolution.
	Window, Step time.Duration
	// Timeout bounds the API and Prometheus calls behind one request.
	Timeout time.Duration
	Now     func() time.Time
	Logger  *slog.Logger
}

// Server renders the dashboard's pages.
type Server struct {
	cfg   Config
	pages map[string]*template.Template
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New returns a Server with cfg's zero fields defaulted. It does no I/O.
func New(cfg Config) (*Server, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 15 * time.Minute
	}
	if cfg.Step <= 0 {
		cfg.Step = 15 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, pages: pages}, nil
}

// Handler routes the dashboard's paths.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /workloads", s.workloads)
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /pods/{namespace}/{name}/log", s.podLog)
	mux.HandleFunc("GET /serverless", s.serverless)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /api/range/{plot}", s.rangePlot)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /static/chart.min.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		http.ServeFile(w, r, s.cfg.ChartJS)
	})
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return mux
}

// pageNames are the pages, in the navigation's order, with their titles.
var pageNames = []struct{ Path, Name, Title string }{
	{"/", "overview", "Cluster"},
	{"/workloads", "workloads", "Workloads"},
	{"/pods", "pods", "Pods"},
	{"/serverless", "serverless", "Serverless"},
	{"/events", "events", "Events"},
}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"percent": func(v float64) string { return fmt.Sprintf("%.1f%%", v*100) },
		"bytes":   humanBytes,
		"age":     func(d time.Duration) string { return shortDuration(d) },
		"rate":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("layout template: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, p := range pageNames {
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+p.Name+".html")
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", p.Name, err)
		}
		pages[p.Name] = t
	}
	return pages, nil
}

// page is what the layout renders around a page's own data.
type page struct {
	Name, Title string
	Nav         []struct{ Path, Name, Title string }
	Refresh     int64 // milliseconds
	Now         time.Time
	// Errors are the calls that failed while gathering the page: shown, not fatal.
	Errors []string
	Data   any
}

func (s *Server) render(w http.ResponseWriter, name string, p *page) {
	for _, n := range pageNames {
		if n.Name == name {
			p.Title = n.Title
		}
	}
	p.Name, p.Nav, p.Refresh, p.Now = name, pageNames, s.cfg.Refresh.Milliseconds(), s.cfg.Now()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.pages[name].ExecuteTemplate(w, "layout.html", p); err != nil {
		s.cfg.Logger.Error("render page", "page", name, "err", err)
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.cfg.Logger.Debug("write json", "err", err)
	}
}

// callCtx bounds the calls behind one request.
func (s *Server) callCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.Timeout)
}

func (p *page) fail(what string, err error) {
	p.Errors = append(p.Errors, fmt.Sprintf("%s: %v", what, err))
}

func humanBytes(v float64) string {
	const unit = 1024
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}
