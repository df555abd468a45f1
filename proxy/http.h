/*
 * HTTP/1.x message-head parsing for cordon-proxy: a strict request-head
 * parser with request-smuggling defences, the origin-form rewrite of a
 * proxied request, a response-head parser for keeping client connections
 * alive, and an incremental chunked-body scanner. Pure functions: no I/O;
 * parsed structs point into the caller's buffer, nothing is copied.
 */
#ifndef CORDON_PROXY_HTTP_H
#define CORDON_PROXY_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cbuf;

#define HTTP_MAX_HEADERS 100	/* more header lines -> -EMSGSIZE (431) */

enum http_target_form {
	HTTP_TARGET_NONE = 0,
	HTTP_TARGET_ORIGIN,	/* "/path?query" (server refuses it) */
	HTTP_TARGET_ABSOLUTE,	/* "scheme://authority/path?query" */
	HTTP_TARGET_AUTHORITY,	/* "host:port", CONNECT only */
	HTTP_TARGET_ASTERISK,	/* "*", OPTIONS only */
};

/* One header line. Pointers into the parsed buffer; the value has its
 * leading and trailing SP/HTAB removed (may be empty). */
struct http_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/*
 * A parsed request head. Every pointer points into the buffer given to
 * proxy_http_request_parse (which the caller keeps alive and unchanged
 * while the struct is used), except path when it is the static "/".
 * Nothing to free.
 */
struct http_request {
	const char *method;	/* token, case-sensitive ("CONNECT", "GET") */
	size_t method_len;
	const char *target;	/* request-target as sent */
	size_t target_len;
	int version_minor;	/* 0 or 1 (HTTP/1.0, HTTP/1.1) */
	bool is_connect;	/* method is exactly "CONNECT" */
	enum http_target_form form;

	/* ABSOLUTE: scheme as sent (e.g. "http", compare case-insensitively),
	 * else NULL/0. */
	const char *scheme;
	size_t scheme_len;
	/* ABSOLUTE and AUTHORITY: host as written (IPv6 with its brackets, not
	 * validated: give it to proxy_host_parse), the port (explicit, or the
	 * scheme's default: 80 for http, 443 for https, 0 for others), and
	 * whether it was explicit. CONNECT always has an explicit port. */
	const char *host;
	size_t host_len;
	uint16_t port;
	bool port_explicit;
	/* ABSOLUTE: path and query to forward in origin-form ("/" when the
	 * URI has no path). ORIGIN: the target itself. Else NULL/0. */
	const char *path;
	size_t path_len;

	size_t nheaders;
	struct http_header headers[HTTP_MAX_HEADERS];
	/* Derived framing facts (validated, see proxy_http_request_parse). */
	const struct http_header *host_header;	/* the Host line, or NULL */
	const struct http_header *connection;	/* Connection line, or NULL */
	int64_t content_length;	/* -1 when absent */
	bool chunked;		/* Transfer-Encoding: chunked */
	/* Client wants the connection kept after this request: HTTP/1.1
	 * without a "close" Connection token, or HTTP/1.0 with "keep-alive". */
	bool keep_alive;
	size_t head_len;	/* bytes of the head, same as the return value */
};

/*
 * Parses one request head from buf[0..len). Up to 8 leading empty lines
 * (CRLF) are skipped. Strict RFC 9110/9112: method is a token, exactly one
 * SP around a request-target of visible ASCII, version exactly HTTP/1.0 or
 * HTTP/1.1; lines end in CRLF (bare LF or bare CR: -EINVAL); field names
 * are tokens with no space before ':'; values have no CTL but HTAB
 * (obs-text allowed); obs-fold (a line starting with SP/HTAB) is -EINVAL.
 * Target form must fit the method (authority-form iff CONNECT, "*" only for
 * OPTIONS). An absolute URI must be scheme "://" authority [path][?query],
 * with no userinfo ('@'), no fragment, a non-empty host, a valid port if
 * present, and a path when a query is present ("http://h?q" is -EINVAL).
 * Framing (smuggling defences), all -EINVAL:
 *   Content-Length and Transfer-Encoding both present; Content-Length not
 *   pure digits or over 2^62, or repeated with different values;
 *   Transfer-Encoding repeated or other than exactly "chunked"
 *   (case-insensitive); Transfer-Encoding in HTTP/1.0; more than one Host;
 *   a Connection header listing Host, Content-Length or Transfer-Encoding.
 *   A body on CONNECT (Content-Length > 0 or chunked) is -EINVAL too.
 * Returns the head length (> 0, through the final CRLFCRLF; the body, if
 * any, starts there), -EAGAIN when more bytes are needed, -EMSGSIZE when
 * there is no complete head within max_head bytes or more than
 * HTTP_MAX_HEADERS header lines (-> 431), -EINVAL when malformed (-> 400),
 * -ERANGE when the request line is complete and the target's port is not a
 * port (proxy_host_port_split: "h:00443", "h:0", "h:" -> 400 bad-port;
 * the rest of the head is then not looked at).
 * Never -ENOSYS: method policy (405) is left to the caller. On any failure
 * *req is zeroed. Cheap enough to call again from the start whenever more
 * bytes arrive.
 */
int proxy_http_request_parse(const char *buf, size_t len, size_t max_head,
    struct http_request *req);

/*
 * True for the hop-by-hop header names a proxy removes before forwarding
 * (case-insensitive): Connection, Keep-Alive, Proxy-Connection, TE,
 * Trailer, Upgrade, and every "Proxy-*" name (Proxy-Authorization,
 * Proxy-Authenticate, ...). Transfer-Encoding is NOT hop-by-hop here: the
 * proxy forwards chunked bodies verbatim, so the header stays.
 */
bool proxy_http_header_is_hop_by_hop(const char *name, size_t len);

/* True when name (case-insensitive) is one of the comma-separated tokens
 * of req's Connection header(s). */
bool proxy_http_connection_lists(const struct http_request *req,
    const char *name, size_t len);

/*
 * Checks that the Host header agrees with the absolute URI: same host
 * (case-insensitive) and same port, a missing port meaning the scheme's
 * default ("Host: a.example:80" agrees with "http://a.example/"). A
 * missing Host header is fine (the rewrite adds one). For CONNECT and the
 * other forms the Host header is not forwarded and not checked: returns 0.
 * Returns 0 or -EINVAL (-> 400).
 */
int proxy_http_request_check_host(const struct http_request *req);

/*
 * Appends to out the head to send upstream for an ABSOLUTE request:
 *   METHOD SP path SP "HTTP/1.1" CRLF
 *   "Host: " uri-authority CRLF           (only if the request had no Host)
 *   every other header line in order, as name ": " value (the name as
 *     sent, the value without its surrounding whitespace), except
 *     hop-by-hop ones (proxy_http_header_is_hop_by_hop) and names listed in
 *     Connection
 *   "Connection: close" CRLF CRLF
 * Upstream connections carry one request each ("Connection: close"); the
 * client side may still be kept alive (req->keep_alive, and see
 * proxy_http_response_parse). The body (content_length bytes or the chunked
 * stream) follows unchanged. Returns 0, -EINVAL when req is not
 * absolute-form, -ENOSPC when out's limit was reached (out then holds a
 * truncated head: do not send it) or -ENOMEM.
 */
int proxy_http_request_rewrite(const struct http_request *req,
    struct cbuf *out);

/*
 * The same for an ORIGIN-form request inside an inspected tunnel:
 *   METHOD SP target SP "HTTP/1.1" CRLF "Host: " authority CRLF
 *   every other header as proxy_http_request_rewrite keeps them, less the
 *     client's Host (the caller checked it names the tunnel's host) and
 *     every header named inject_name (case-insensitive)
 *   inject_name ": " inject_value CRLF     (when inject_name is not NULL)
 *   "Connection: close" CRLF CRLF
 * The injected header replaces whatever the client sent under that name.
 * Returns 0, -EINVAL (req not origin-form, inject_name not a token, or
 * inject_value holding a control character other than HTAB), -ENOSPC
 * (out's limit: do not send) or -ENOMEM.
 */
int proxy_http_request_rewrite_origin(const struct http_request *req,
    const char *authority, const char *inject_name, const char *inject_value,
    struct cbuf *out);

/* How the body of a response is delimited. */
enum http_body_kind {
	HTTP_BODY_NONE = 0,	/* no body (HEAD, 1xx, 204, 304) */
	HTTP_BODY_LENGTH,	/* exactly content_length bytes */
	HTTP_BODY_CHUNKED,	/* use proxy_http_chunked_scan */
	HTTP_BODY_CLOSE,	/* until the upstream closes: close the client
				 * after it too */
};

/* A parsed response head; pointers into the parsed buffer as for
 * http_request. */
struct http_response {
	int version_minor;	/* 0 or 1 */
	int status;		/* 100-999 */
	const char *reason;
	size_t reason_len;
	size_t nheaders;
	struct http_header headers[HTTP_MAX_HEADERS];
	enum http_body_kind body;
	int64_t content_length;	/* HTTP_BODY_LENGTH, else -1 */
	bool keep_alive;	/* upstream would keep the connection */
	size_t head_len;
};

/*
 * Parses one response head (status line, headers, CRLFCRLF), same line
 * rules and return values as proxy_http_request_parse. request_was_head: the
 * request method was HEAD (no body whatever the headers say). Conflicting
 * or unusable framing (both Content-Length and Transfer-Encoding, differing
 * lengths, a coding other than chunked last) gives HTTP_BODY_CLOSE rather
 * than an error: the proxy then relays until upstream EOF and closes the
 * client. On failure *resp is zeroed.
 */
int proxy_http_response_parse(const char *buf, size_t len, size_t max_head,
    bool request_was_head, struct http_response *resp);

/* State of the chunked-body scanner; fields are private. Initialise with
 * proxy_http_chunked_init; a plain value, nothing to free. */
struct http_chunk_state {
	int state;
	uint64_t remaining;	/* data bytes left in the current chunk */
	size_t digits;		/* size digits seen */
	size_t linelen;		/* bytes in the current ext/trailer line */
	size_t trailer_bytes;	/* total trailer bytes */
};

void proxy_http_chunked_init(struct http_chunk_state *st);

/*
 * Scans the next len bytes of a chunked message body (RFC 9112 7.1: hex
 * size, optional chunk extensions, CRLF, data, CRLF, ..., "0" CRLF,
 * trailer lines, CRLF). Returns how many bytes of buf belong to the body
 * (forward them verbatim); *done is set true once the final CRLF has been
 * consumed (the rest of buf, if any, is the next message), and further
 * calls return 0. Bytes may be split anywhere across calls. Strict: CRLF
 * only, at most 16 size digits (size < 2^60), extensions of printable
 * characters up to 4096 bytes, trailer lines that look like header lines,
 * 8192 trailer bytes in total. Returns -EINVAL when malformed (the state is
 * then stuck in error).
 */
ssize_t proxy_http_chunked_scan(struct http_chunk_state *st, const char *buf,
    size_t len, bool *done);

#endif
