package serve

import (
	"errors"
	"net/http"
	"strings"

	"github.com/orca-agent/orca/internal/httpguard"
)

// wrap admits a request and turns a handler's error into its response.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admitted(w, r, rt.public) {
			return
		}
		limit := s.opts.MaxBody
		if rt.message {
			limit = s.opts.MaxMessageBody
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		err := rt.h(w, r)
		if err == nil {
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			s.opts.Logger.Error("orca serve", "method", r.Method, "path", r.URL.Path, "err", err)
			ae = &apiError{status: http.StatusInternalServerError, code: "internal", msg: err.Error()}
		}
		writeError(w, ae)
	})
}

// admitted checks the Host, the Origin and the token (httpguard),
// answering the request itself when one fails.
func (s *Server) admitted(w http.ResponseWriter, r *http.Request, public bool) bool {
	if err := s.guard.Check(r); err != nil {
		ae := &apiError{status: http.StatusForbidden, code: "origin_not_allowed", msg: err.Error()}
		if errors.Is(err, httpguard.ErrHost) {
			ae.status, ae.code = http.StatusMisdirectedRequest, "host_not_allowed"
		}
		writeError(w, ae)
		return false
	}
	if public {
		return true
	}
	token, ok := httpguard.Bearer(r)
	if c, err := r.Cookie(cookieName); !ok && err == nil {
		token, ok = c.Value, true
	}
	if !ok && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events") {
		token, ok = r.URL.Query().Get("access_token"), r.URL.Query().Has("access_token")
	}
	if !ok || !httpguard.Same(token, s.opts.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orca"`)
		msg := "the request has no bearer token (Authorization: Bearer TOKEN)"
		if ok {
			msg = "the bearer token is wrong"
		}
		writeError(w, &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: msg})
		return false
	}
	return true
}

type loginRequest struct {
	// Token is the server's token. Required.
	Token string `json:"token"`
}

// login checks the token and gives the page its sign-in cookie (HttpOnly,
// SameSite=Strict: no other site's page sends it).
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var req loginRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if !httpguard.Same(req.Token, s.opts.Token) {
		return &apiError{status: http.StatusUnauthorized, code: "unauthorized", field: "token", msg: "the token is wrong"}
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
