/* http_client.h — a small HTTP/1.1 client over plain sockets for the service's test and
 * load generator: one keep-alive connection per pm_http_conn, one request at a time.
 *
 * Promise: bounded in time (every send and receive has the connection's timeout) and in
 * memory (a response body over max_body bytes is an error); talks only to the address it
 * is given. Raw sends let tests write malformed requests on purpose. */
#ifndef PM_SERVE_HTTP_CLIENT_H
#define PM_SERVE_HTTP_CLIENT_H

#include <stddef.h>

typedef struct pm_http_conn {
    int fd;
    int timeout_ms;
    char host[64];
    int port;
    char source[64];     /* the local address bound before connecting, "" = any          */
    const char *headers; /* extra request header lines, each ending "\r\n"; NULL = none */
} pm_http_conn;

typedef struct pm_http_response {
    int status;              /* 200, 404, ...; 0 when no answer came                      */
    char content_type[96];
    char server_timing[160]; /* the Server-Timing header, "" when none                    */
    char retry_after[32];    /* the Retry-After header, "" when none                      */
    char *body;              /* malloc'd, NUL-terminated (body_len excludes the NUL)      */
    size_t body_len;
    int closed;              /* the server closes the connection after this response     */
} pm_http_response;

/* Connects to host:port (IPv4 text). 0 on success, -1 (errno set) otherwise. */
int pm_http_connect(pm_http_conn *c, const char *host, int port, int timeout_ms);
/* The same from the local address `source` (IPv4 text, e.g. "127.0.0.2"). */
int pm_http_connect_from(pm_http_conn *c, const char *source, const char *host, int port,
                         int timeout_ms);
void pm_http_close(pm_http_conn *c);

/* Sends one request (Content-Length when body is not NULL) and reads its response.
 * Reconnects first when the connection was closed. 0 on success, -1 on a transport
 * error (r->status 0). Free r->body with pm_http_response_free. */
int pm_http_request(pm_http_conn *c, const char *method, const char *path, const char *type,
                    const void *body, size_t body_len, size_t max_body, pm_http_response *r);

/* Sends `len` raw bytes on a fresh connection, closes the sending side, and reads what
 * comes back (a response, or nothing when the server just closes). For malformed and
 * truncated requests. 0 when a response was read, -1 otherwise. */
int pm_http_raw(const char *host, int port, int timeout_ms, const void *bytes, size_t len,
                pm_http_response *r);

void pm_http_response_free(pm_http_response *r);

#endif
