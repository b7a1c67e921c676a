package fetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RemoteExec tries WebSocket first (GET) and falls back to SPDY (POST) only when the upgrade is
// refused; the SPDY executor, built lazily, still works then.
func TestRemoteExecFallsBackToSPDY(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Method)
		mu.Unlock()
		// Neither protocol upgrades here: a server (or proxy) that cannot.
		http.Error(w, "no upgrade here", http.StatusBadRequest)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = RemoteExec(client, cfg)(context.Background(), "ns", "pod", "c", []string{"true"}, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("exec through a server that cannot upgrade succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(methods, []string{"GET", "POST"}) {
		t.Errorf("requests %v, want GET (WebSocket) then POST (SPDY)", methods)
	}
}
