package prom

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestQueryAndRange(t *testing.T) {
	var gotRange string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/prefix/api/v1/query":
			if r.URL.Query().Get("query") != "up" {
				http.Error(w, `{"status":"error","error":"bad query"}`, http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[100.5,"1"]}]}}`))
		case "/prefix/api/v1/query_range":
			gotRange = r.URL.RawQuery
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"node":"n1"},"values":[[100,"0.25"],[115,"0.5"]]}]}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := New(srv.URL+"/prefix/", nil)

	samples, err := c.Query(t.Context(), "up")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Sample{{Labels: map[string]string{"job": "a"}, Value: 1}}, samples); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
	if _, err := c.Query(t.Context(), "down"); err == nil || err.Error() != "prometheus /api/v1/query: bad query" {
		t.Errorf("Query of a bad query: err = %v, want Prometheus' error", err)
	}

	series, err := c.QueryRange(t.Context(), "x", time.Unix(100, 0), time.Unix(115, 0), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []Series{{Labels: map[string]string{"node": "n1"}, Points: []Point{{time.Unix(100, 0), 0.25}, {time.Unix(115, 0), 0.5}}}}
	if diff := cmp.Diff(want, series); diff != "" {
		t.Errorf("QueryRange (-want +got):\n%s", diff)
	}
	if want := "end=115&query=x&start=100&step=15"; gotRange != want {
		t.Errorf("query_range parameters %q, want %q", gotRange, want)
	}
}

func TestWrongResultType(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`))
	}))
	defer srv.Close()
	if _, err := New(srv.URL, nil).Query(t.Context(), "1"); err == nil {
		t.Error("a scalar answer was taken for a vector")
	}
}
