package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"minik8s.io/kubelet/internal/runtime"
)

// Who may load images into the node: the serverless component, which sends the function
// images it built (there is no registry), and cluster admins.
const (
	imageLoaderUser  = "system:serverless"
	imageLoaderGroup = "system:masters"
)

// ImagePresence is the body of GET /images/{ref}: whether the node's engine has the image,
// and its id there (a sender compares it with its own: a tag may name another image here).
type ImagePresence struct {
	Image   string `json:"image"`
	Present bool   `json:"present"`
	ID      string `json:"id,omitempty"`
}

// ImagesLoaded is the body of POST /images: the references the archive tagged.
type ImagesLoaded struct {
	Loaded []string `json:"loaded"`
}

// imagePresent answers 200 when the node's engine has the image, 404 when it has not.
func (s *Server) imagePresent(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	if ref == "" {
		http.Error(w, "no image named", http.StatusBadRequest)
		return
	}
	id, err := s.cfg.Runtime.ImageID(r.Context(), ref)
	if err != nil {
		http.Error(w, fmt.Sprintf("inspect image %s: %v", ref, err), http.StatusInternalServerError)
		return
	}
	code := http.StatusOK
	if id == "" {
		code = http.StatusNotFound
	}
	writeJSON(w, code, ImagePresence{Image: ref, Present: id != "", ID: id})
}

// loadImage loads the `docker save` archive in the body into the node's engine.
func (s *Server) loadImage(w http.ResponseWriter, r *http.Request) {
	id := identityFrom(r.Context())
	if id.User != imageLoaderUser && !slices.Contains(id.Groups, imageLoaderGroup) {
		http.Error(w, fmt.Sprintf("user %q may not load images into node %s (only %s and %s may)",
			id.User, s.cfg.Node, imageLoaderUser, imageLoaderGroup), http.StatusForbidden)
		return
	}
	loaded, err := s.cfg.Runtime.LoadImage(r.Context(), r.Body)
	switch {
	case errors.Is(err, runtime.ErrInvalidImage):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case len(loaded) == 0:
		http.Error(w, "the archive tagged no image", http.StatusBadRequest)
		return
	}
	s.cfg.Logger.Info("loaded images", "images", loaded, "user", id.User)
	writeJSON(w, http.StatusOK, ImagesLoaded{Loaded: loaded})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
