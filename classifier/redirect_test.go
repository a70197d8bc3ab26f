package classifier

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A backend (or anything on its path) answering 307 must not get the next
// request, and its API key, sent to the host it names, nor that host's
// answer taken as the verdict: for every API, the call fails closed.
func TestRedirectsAreRefused(t *testing.T) {
	const key = "sk-ant-secret-do-not-leak"
	t.Setenv("TOOLGATE_TEST_KEY", key)
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, "x-api-key="+r.Header.Get("X-Api-Key")+" authorization="+r.Header.Get("Authorization"))
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(allowAnswer(api)))
			}))
			t.Cleanup(other.Close)
			// "localhost" vs 127.0.0.1: another host for net/http.
			otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
			first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(first.Close)
			c := newTestClassifier(t, apiConfig(api, first.URL+"/v1"))
			v, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
			mu.Lock()
			defer mu.Unlock()
			for _, g := range got {
				if strings.Contains(g, key) {
					t.Errorf("the key reached another host: %s", g)
				}
			}
			if err == nil {
				t.Errorf("a redirected answer was taken as a verdict: %v", v.Decision)
			}
		})
	}
}
