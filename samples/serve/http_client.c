/* http_client.c — see http_client.h. */
#define _POSIX_C_SOURCE 200809L
#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int pm_http_connect(pm_http_conn *c, const char *host, int port, int timeout_ms)
{
    return pm_http_connect_from(c, "", host, port, timeout_ms);
}

int pm_http_connect_from(pm_http_conn *c, const char *source, const char *host, int port,
                         int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->timeout_ms = timeout_ms;
    c->port = port;
    snprintf(c->host, sizeof c->host, "%s", host);
    snprintf(c->source, sizeof c->source, "%s", source ? source : "");
    struct sockaddr_in local;
    memset(&local, 0, sizeof local);
    local.sin_family = AF_INET;
    if (c->source[0] && inet_pton(AF_INET, c->source, &local.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if ((c->source[0] && bind(fd, (struct sockaddr *)&local, sizeof local) != 0) ||
        connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    c->fd = fd;
    return 0;
}

void pm_http_close(pm_http_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void pm_http_response_free(pm_http_response *r)
{
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

static int send_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads one response from fd. The head is read into a growing buffer until the blank
 * line; the body by Content-Length, or to the end of the stream without one. */
static int read_response(int fd, size_t max_body, pm_http_response *r)
{
    memset(r, 0, sizeof *r);
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return -1;
    char *end_of_head = NULL;
    while (!end_of_head) {
        if (len == cap) { /* heads over 8 KiB are not ours */
            free(buf);
            return -1;
        }
        ssize_t n = recv(fd, buf + len, cap - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            return -1;
        }
        len += (size_t)n;
        buf[len] = 0;
        end_of_head = strstr(buf, "\r\n\r\n");
    }
    size_t head_len = (size_t)(end_of_head - buf) + 4;
    if (sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1) {
        free(buf);
        return -1;
    }
    long long content_length = -1;
    for (char *line = strstr(buf, "\r\n") + 2; line < end_of_head;) {
        char *eol = strstr(line, "\r\n");
        *eol = 0;
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            content_length = strtoll(line + 15, NULL, 10);
        else if (strncasecmp(line, "Content-Type:", 13) == 0)
            snprintf(r->content_type, sizeof r->content_type, "%s", line + 13 + strspn(line + 13, " "));
        else if (strncasecmp(line, "Server-Timing:", 14) == 0)
            snprintf(r->server_timing, sizeof r->server_timing, "%s", line + 14 + strspn(line + 14, " "));
        else if (strncasecmp(line, "Retry-After:", 12) == 0)
            snprintf(r->retry_after, sizeof r->retry_after, "%s", line + 12 + strspn(line + 12, " "));
        else if (strncasecmp(line, "Connection:", 11) == 0 && strstr(line, "close"))
            r->closed = 1;
        line = eol + 2;
    }
    if (content_length < 0)
        r->closed = 1;
    if (content_length > (long long)max_body) {
        free(buf);
        r->status = 0;
        return -1;
    }
    size_t want = content_length >= 0 ? (size_t)content_length : max_body;
    size_t have = len - head_len;
    char *body = malloc((content_length >= 0 ? want : 65536) + 1);
    size_t body_cap = content_length >= 0 ? want : 65536;
    if (!body) {
        free(buf);
        return -1;
    }
    if (have > want)
        have = want;
    memcpy(body, buf + head_len, have);
    free(buf);
    while (have < want) {
        if (have == body_cap) { /* only without Content-Length: grow up to max_body */
            size_t grown_cap = body_cap * 2 > max_body ? max_body : body_cap * 2;
            char *grown = realloc(body, grown_cap + 1);
            if (!grown) {
                free(body);
                return -1;
            }
            body = grown;
            body_cap = grown_cap;
        }
        ssize_t n = recv(fd, body + have, body_cap - have, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && content_length < 0)
            break; /* the end of a body without a length */
        if (n <= 0) {
            free(body);
            r->status = 0;
            return -1;
        }
        have += (size_t)n;
    }
    body[have] = 0;
    r->body = body;
    r->body_len = have;
    return 0;
}

int pm_http_request(pm_http_conn *c, const char *method, const char *path, const char *type,
                    const void *body, size_t body_len, size_t max_body, pm_http_response *r)
{
    memset(r, 0, sizeof *r);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->fd < 0) {
            pm_http_conn fresh;
            if (pm_http_connect_from(&fresh, c->source, c->host, c->port, c->timeout_ms) != 0)
                return -1;
            fresh.headers = c->headers;
            *c = fresh;
        }
        char head[2048];
        const char *extra = c->headers ? c->headers : "";
        int n = body ? snprintf(head, sizeof head,
                                "%s %s HTTP/1.1\r\nHost: %s:%d\r\n%sContent-Type: %s\r\n"
                                "Content-Length: %zu\r\n\r\n", method, path, c->host, c->port,
                                extra, type ? type : "application/octet-stream", body_len)
                     : snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n",
                                method, path, c->host, c->port, extra);
        if (n < 0 || n >= (int)sizeof head)
            return -1;
        int sent = send_all(c->fd, head, (size_t)n) == 0 &&
                   (!body || send_all(c->fd, body, body_len) == 0);
        if (sent && read_response(c->fd, max_body, r) == 0) {
            if (r->closed)
                pm_http_close(c);
            return 0;
        }
        /* a kept-alive connection the server closed meanwhile: retry once on a new one */
        pm_http_close(c);
        pm_http_response_free(r);
    }
    return -1;
}

int pm_http_raw(const char *host, int port, int timeout_ms, const void *bytes, size_t len,
                pm_http_response *r)
{
    memset(r, 0, sizeof *r);
    pm_http_conn c;
    if (pm_http_connect(&c, host, port, timeout_ms) != 0)
        return -1;
    int rc = send_all(c.fd, bytes, len);
    shutdown(c.fd, SHUT_WR);
    if (rc == 0)
        rc = read_response(c.fd, 1 << 20, r);
    pm_http_close(&c);
    return rc;
}
