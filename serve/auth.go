package serve

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
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

// admitted checks the Host, the Origin and the token, answering the
// request itself when one fails.
func (s *Server) admitted(w http.ResponseWriter, r *http.Request, public bool) bool {
	if !s.hostAllowed(r.Host) {
		writeError(w, &apiError{status: http.StatusMisdirectedRequest, code: "host_not_allowed",
			msg: fmt.Sprintf("Host %q is not this server's (it answers loopback names and the allowed hosts only)", r.Host)})
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(r, origin) {
		writeError(w, &apiError{status: http.StatusForbidden, code: "origin_not_allowed", msg: fmt.Sprintf("requests from pages of %s are not allowed", origin)})
		return false
	}
	if r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		writeError(w, &apiError{status: http.StatusForbidden, code: "origin_not_allowed", msg: "cross-site requests are not allowed"})
		return false
	}
	if public {
		return true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if c, err := r.Cookie(cookieName); !ok && err == nil {
		token, ok = c.Value, true
	}
	if !ok && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events") {
		token, ok = r.URL.Query().Get("access_token"), r.URL.Query().Has("access_token")
	}
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.Token)) != 1 {
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

func (s *Server) hostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" || slices.Contains(s.opts.AllowedHosts, host) || slices.Contains(s.opts.AllowedHosts, h) {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) originAllowed(r *http.Request, origin string) bool {
	if slices.Contains(s.opts.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host && (u.Scheme == "http" || u.Scheme == "https")
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
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.opts.Token)) != 1 {
		return &apiError{status: http.StatusUnauthorized, code: "unauthorized", field: "token", msg: "the token is wrong"}
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
