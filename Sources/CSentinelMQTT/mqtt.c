// The only code that includes mosquitto.h: a client with its own network thread, polled by the caller.
#include "sentinel_mqtt.h"

#include <errno.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <time.h>

typedef struct {
    char *topic;
    int qos;
} subscription;

/// What the network thread hands the owner (PUBACKs, messages): a growable array of `size`-byte items, oldest first.
typedef struct {
    char *items;
    int count, capacity;
    size_t size;
} queue;

/// Appends a copy of `item`; 0 when memory ran out (the item is not kept).
static int queue_push(queue *q, const void *item) {
    if (q->count == q->capacity) {
        int capacity = q->capacity ? q->capacity * 2 : 256;
        char *grown = realloc(q->items, q->size * (size_t)capacity);
        if (grown == NULL) return 0;
        q->items = grown;
        q->capacity = capacity;
    }
    memcpy(q->items + q->size * (size_t)q->count++, item, q->size);
    return 1;
}

/// Moves up to `capacity` of the oldest items into `out`; returns how many.
static int queue_take(queue *q, void *out, int capacity) {
    int n = q->count < capacity ? q->count : capacity;
    memcpy(out, q->items, q->size * (size_t)n);
    memmove(q->items, q->items + q->size * (size_t)n, q->size * (size_t)(q->count - n));
    q->count -= n;
    return n;
}

struct snl_mqtt {
    struct mosquitto *mosq;
    mosquitto_property *connect_properties;
    char *host;
    int port;
    int keepalive;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;  // guards everything below
    pthread_cond_t wake;
    int stopping;
    snl_mqtt_state state;
    queue acks;      // of snl_mqtt_ack
    queue messages;  // of snl_mqtt_message
    int hold;        // acknowledge received messages only once released (snl_mqtt_hold_acknowledgements)
    long handed;     // messages handed over, counted from the first connection (each message's sequence)
    long released;   // every message up to this sequence may be acknowledged
    subscription *subscriptions;
    int subscription_count;
    int wake_fd;     // an eventfd: a message published from another thread wakes the network thread's poll
};

static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static void library_init(void) { mosquitto_lib_init(); }

static void fail(snl_mqtt_error *error, const char *format, const char *detail) {
    if (error != NULL) snprintf(error->message, sizeof(error->message), format, detail ? detail : "");
}

static void set_reason(snl_mqtt *c, const char *reason) {
    snprintf(c->state.reason, sizeof(c->state.reason), "%s", reason);
}

/// Text for a library return code; errno's own text for a system error.
static const char *describe(int rc) {
    return rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc);
}

static void on_connect(struct mosquitto *mosq, void *object, int reason, int flags, const mosquitto_property *props) {
    (void)flags;
    (void)props;
    snl_mqtt *c = object;
    pthread_mutex_lock(&c->lock);
    if (reason == 0) {
        c->state.connected = 1;
        c->state.connects += 1;
        c->state.failures = 0;
        set_reason(c, "");
        for (int i = 0; i < c->subscription_count; i++) {
            mosquitto_subscribe_v5(mosq, NULL, c->subscriptions[i].topic, c->subscriptions[i].qos, 0, NULL);
        }
    } else {
        c->state.connected = 0;
        c->state.failures += 1;
        char text[256];
        snprintf(text, sizeof(text), "the broker refused the connection: %s", mosquitto_reason_string(reason));
        set_reason(c, text);
    }
    pthread_mutex_unlock(&c->lock);
}

static void on_disconnect(struct mosquitto *mosq, void *object, int rc, const mosquitto_property *props) {
    (void)mosq;
    (void)props;
    snl_mqtt *c = object;
    pthread_mutex_lock(&c->lock);
    if (c->state.connected && rc != 0) {
        char text[256];
        snprintf(text, sizeof(text), "connection lost: %s", describe(rc));
        set_reason(c, text);
    }
    c->state.connected = 0;
    pthread_mutex_unlock(&c->lock);
}

static void on_publish(struct mosquitto *mosq, void *object, int mid, int reason, const mosquitto_property *props) {
    (void)mosq;
    (void)props;
    snl_mqtt *c = object;
    snl_mqtt_ack ack = {mid, reason};
    pthread_mutex_lock(&c->lock);
    queue_push(&c->acks, &ack);
    pthread_mutex_unlock(&c->lock);
}

static void on_message(struct mosquitto *mosq, void *object, const struct mosquitto_message *message,
                       const mosquitto_property *props) {
    (void)mosq;
    (void)props;
    snl_mqtt *c = object;
    char *topic = strdup(message->topic);
    void *payload = malloc((size_t)message->payloadlen + 1);
    if (topic == NULL || payload == NULL) {
        free(topic);
        free(payload);
        return;
    }
    memcpy(payload, message->payload, (size_t)message->payloadlen);
    ((char *)payload)[message->payloadlen] = 0;
    snl_mqtt_message received = {topic, payload, message->payloadlen, 0};
    pthread_mutex_lock(&c->lock);
    received.sequence = c->handed + 1;
    int kept = queue_push(&c->messages, &received);
    if (kept) c->handed += 1;
    pthread_mutex_unlock(&c->lock);
    if (!kept) snl_mqtt_message_free(&received);
}

/// Sleeps `seconds` or until destroyed; true when destroyed.
static int wait_or_stop(snl_mqtt *c, double seconds) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long nanoseconds = until.tv_nsec + (long)((seconds - (long)seconds) * 1e9);
    until.tv_sec += (time_t)seconds + nanoseconds / 1000000000L;
    until.tv_nsec = nanoseconds % 1000000000L;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping && pthread_cond_timedwait(&c->wake, &c->lock, &until) == 0) {
    }
    int stopping = c->stopping;
    pthread_mutex_unlock(&c->lock);
    return stopping;
}

static int is_stopping(snl_mqtt *c) {
    pthread_mutex_lock(&c->lock);
    int stopping = c->stopping;
    pthread_mutex_unlock(&c->lock);
    return stopping;
}

/// Waits until every message handed over has been released, at most `seconds`; true when they all are.
static int wait_released(snl_mqtt *c, double seconds) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long nanoseconds = until.tv_nsec + (long)(seconds * 1e9);
    until.tv_sec += nanoseconds / 1000000000L;
    until.tv_nsec = nanoseconds % 1000000000L;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping && c->released < c->handed && pthread_cond_timedwait(&c->wake, &c->lock, &until) == 0) {
    }
    int released = c->released >= c->handed;
    pthread_mutex_unlock(&c->lock);
    return released;
}

/// At most this many packets are read in one turn before what they handed over must be released.
#define SNL_MQTT_READ_BURST 1000

/// One turn of the connection. A client that holds acknowledgements runs the loop in parts: libmosquitto queues a
/// QoS 1 message's PUBACK before it hands the message over, and writes it with whatever else is queued, so this
/// writes only once every message handed over has been released by the owner (stored, for a fleet), and reads no
/// more until then. What arrived meanwhile waits in the socket and at the broker, which holds what was never
/// acknowledged for this client's session: a client killed between reading and releasing loses nothing.
static int serve(snl_mqtt *c) {
    if (c->hold && !wait_released(c, 0.1)) return mosquitto_loop_misc(c->mosq);
    // poll, not select (mosquitto_loop's): a process with many connections (a fleet's or a box's SSE clients) gives
    // sockets numbers past FD_SETSIZE, which select cannot watch. The wake descriptor stands for libmosquitto's own
    // socket pair: a message published meanwhile goes out at once, not at the next timeout.
    int timeout = 100;
    for (int i = 0; i < SNL_MQTT_READ_BURST; i++) {
        // Held: written once, above, when everything handed over was released; not between reads.
        if ((i == 0 || !c->hold) && mosquitto_want_write(c->mosq)) {
            int rc = mosquitto_loop_write(c->mosq, 1);
            if (rc != MOSQ_ERR_SUCCESS) return rc;
        }
        int fd = mosquitto_socket(c->mosq);
        if (fd < 0) return MOSQ_ERR_NO_CONN;
        short out = !c->hold && mosquitto_want_write(c->mosq) ? POLLOUT : 0;
        struct pollfd watched[2] = {{fd, POLLIN | out, 0}, {c->wake_fd, POLLIN, 0}};
        int ready = poll(watched, c->hold ? 1 : 2, timeout);
        if (ready < 0) return errno == EINTR ? MOSQ_ERR_SUCCESS : MOSQ_ERR_ERRNO;
        if (ready == 0) break;
        if (watched[1].revents & POLLIN) {
            uint64_t count;
            (void)!read(c->wake_fd, &count, sizeof(count));
        }
        if (watched[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            int rc = mosquitto_loop_read(c->mosq, 1);
            if (rc != MOSQ_ERR_SUCCESS) return rc;
        }
        timeout = 0;
    }
    return mosquitto_loop_misc(c->mosq);
}

/// Seconds a broker has to answer CONNECT once the TCP connection is up.
#define SNL_MQTT_CONNACK_SECONDS 10

/// Connects, serves the connection until it drops, and tries again with backoff (0.25 s doubling to 8 s, from
/// the start after a connection that was accepted), until destroyed.
static void *network(void *argument) {
    snl_mqtt *c = argument;
    double backoff = 0.25;
    while (!is_stopping(c)) {
        int rc = mosquitto_connect_bind_v5(c->mosq, c->host, c->port, c->keepalive, NULL, c->connect_properties);
        if (rc != MOSQ_ERR_SUCCESS) {
            pthread_mutex_lock(&c->lock);
            c->state.failures += 1;
            char text[256];
            snprintf(text, sizeof(text), "cannot connect to %s:%d: %s", c->host, c->port, describe(rc));
            set_reason(c, text);
            pthread_mutex_unlock(&c->lock);
        } else {
            int connects_before, failures_before;
            pthread_mutex_lock(&c->lock);
            connects_before = c->state.connects;
            failures_before = c->state.failures;
            pthread_mutex_unlock(&c->lock);
            // A broker (or anything on its port) that takes the TCP connection but never answers CONNECT would hold
            // this loop for good, reported as nothing but "not connected": it is a failed attempt after
            // SNL_MQTT_CONNACK_SECONDS.
            struct timespec started;
            clock_gettime(CLOCK_MONOTONIC, &started);
            int unanswered = 0;
            // A new connection: what was handed over before and never acknowledged comes again (its PUBACKs, queued
            // on the old one, are gone), so only later sequences are held.
            pthread_mutex_lock(&c->lock);
            c->released = c->handed;
            pthread_mutex_unlock(&c->lock);
            while (!is_stopping(c) && (rc = serve(c)) == MOSQ_ERR_SUCCESS) {
                pthread_mutex_lock(&c->lock);
                int answered = c->state.connects > connects_before || c->state.failures > failures_before;
                pthread_mutex_unlock(&c->lock);
                if (answered) continue;
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (now.tv_sec - started.tv_sec + (now.tv_nsec - started.tv_nsec) / 1e9 > SNL_MQTT_CONNACK_SECONDS) {
                    unanswered = 1;
                    break;
                }
            }
            if (unanswered) {
                pthread_mutex_lock(&c->lock);
                c->state.failures += 1;
                char text[256];
                snprintf(text, sizeof(text), "%s:%d accepted the connection but sent no CONNACK within %d s (not an MQTT broker, or a stuck one)",
                         c->host, c->port, SNL_MQTT_CONNACK_SECONDS);
                set_reason(c, text);
                pthread_mutex_unlock(&c->lock);
                mosquitto_disconnect(c->mosq);
                if (wait_or_stop(c, backoff)) break;
                backoff = backoff * 2 > 8 ? 8 : backoff * 2;
                continue;
            }
            if (is_stopping(c)) {
                mosquitto_disconnect_v5(c->mosq, 0, NULL);
                mosquitto_loop_write(c->mosq, 1);
                break;
            }
            pthread_mutex_lock(&c->lock);
            if (c->state.connects > connects_before) backoff = 0.25;
            if (c->state.connected || c->state.reason[0] == 0) {
                char text[256];
                snprintf(text, sizeof(text), "connection lost: %s", describe(rc));
                set_reason(c, text);
            }
            c->state.connected = 0;
            pthread_mutex_unlock(&c->lock);
            mosquitto_disconnect(c->mosq);
        }
        if (wait_or_stop(c, backoff)) break;
        backoff = backoff * 2 > 8 ? 8 : backoff * 2;
    }
    return NULL;
}

snl_mqtt_status snl_mqtt_create(
    const char *client_id, int clean_start, uint32_t session_expiry, snl_mqtt **out, snl_mqtt_error *error) {
    if (client_id == NULL || client_id[0] == 0 || out == NULL) {
        fail(error, "%sa client id is needed", NULL);
        return SNL_MQTT_ERR_ARGUMENT;
    }
    pthread_once(&library_once, library_init);
    snl_mqtt *c = calloc(1, sizeof(snl_mqtt));
    if (c == NULL) {
        fail(error, "%sout of memory", NULL);
        return SNL_MQTT_ERR_UNKNOWN;
    }
    c->acks.size = sizeof(snl_mqtt_ack);
    c->messages.size = sizeof(snl_mqtt_message);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->wake_fd < 0) {
        fail(error, "cannot make an MQTT client: %s", strerror(errno));
        free(c);
        return SNL_MQTT_ERR_UNKNOWN;
    }
    c->mosq = mosquitto_new(client_id, clean_start != 0, c);
    if (c->mosq == NULL) {
        fail(error, "cannot make an MQTT client: %s", strerror(errno));
        snl_mqtt_destroy(c);
        return SNL_MQTT_ERR_UNKNOWN;
    }
    mosquitto_int_option(c->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_threaded_set(c->mosq, true);
    mosquitto_connect_v5_callback_set(c->mosq, on_connect);
    mosquitto_disconnect_v5_callback_set(c->mosq, on_disconnect);
    mosquitto_publish_v5_callback_set(c->mosq, on_publish);
    mosquitto_message_v5_callback_set(c->mosq, on_message);
    if (session_expiry > 0) {
        mosquitto_property_add_int32(&c->connect_properties, MQTT_PROP_SESSION_EXPIRY_INTERVAL, session_expiry);
    }
    // The largest packet this client takes: the broker drops a larger message for it instead of sending it, so a
    // hostile 100 MB publish never reaches this process's memory (a fleet peaked at 370-530 MB refusing them).
    mosquitto_property_add_int32(&c->connect_properties, MQTT_PROP_MAXIMUM_PACKET_SIZE, SNL_MQTT_MAX_PACKET);
    set_reason(c, "not connected yet");
    *out = c;
    return SNL_MQTT_OK;
}

void snl_mqtt_stop(snl_mqtt *c) {
    if (c == NULL) return;
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    uint64_t one = 1;
    (void)!write(c->wake_fd, &one, sizeof(one));
    if (c->started) pthread_join(c->thread, NULL);
    c->started = 0;
}

void snl_mqtt_destroy(snl_mqtt *c) {
    if (c == NULL) return;
    snl_mqtt_stop(c);
    if (c->mosq != NULL) mosquitto_destroy(c->mosq);
    mosquitto_property_free_all(&c->connect_properties);
    for (int i = 0; i < c->messages.count; i++) {
        snl_mqtt_message_free((snl_mqtt_message *)(c->messages.items + c->messages.size * (size_t)i));
    }
    for (int i = 0; i < c->subscription_count; i++) free(c->subscriptions[i].topic);
    free(c->subscriptions);
    free(c->messages.items);
    free(c->acks.items);
    if (c->wake_fd >= 0) close(c->wake_fd);
    free(c->host);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

snl_mqtt_status snl_mqtt_credentials(
    snl_mqtt *c, const char *username, const char *password, snl_mqtt_error *error) {
    if (c == NULL) return SNL_MQTT_ERR_ARGUMENT;
    int rc = mosquitto_username_pw_set(c->mosq, username, password);
    if (rc != MOSQ_ERR_SUCCESS) {
        fail(error, "cannot set the MQTT credentials: %s", describe(rc));
        return SNL_MQTT_ERR_ARGUMENT;
    }
    return SNL_MQTT_OK;
}

snl_mqtt_status snl_mqtt_tls(snl_mqtt *c, const char *ca_file, snl_mqtt_error *error) {
    if (c == NULL || ca_file == NULL) return SNL_MQTT_ERR_ARGUMENT;
    int rc = mosquitto_tls_set(c->mosq, ca_file, NULL, NULL, NULL, NULL);
    if (rc != MOSQ_ERR_SUCCESS) {
        char detail[480];
        snprintf(detail, sizeof(detail), "%s: %s", ca_file, describe(rc));
        fail(error, "cannot use the CA file %s", detail);
        return SNL_MQTT_ERR_TLS;
    }
    return SNL_MQTT_OK;
}

snl_mqtt_status snl_mqtt_will(
    snl_mqtt *c, const char *topic, const char *payload, int qos, int retain, snl_mqtt_error *error) {
    if (c == NULL || topic == NULL || payload == NULL) return SNL_MQTT_ERR_ARGUMENT;
    int rc = mosquitto_will_set_v5(c->mosq, topic, (int)strlen(payload), payload, qos, retain != 0, NULL);
    if (rc != MOSQ_ERR_SUCCESS) {
        fail(error, "cannot set the last will: %s", describe(rc));
        return SNL_MQTT_ERR_ARGUMENT;
    }
    return SNL_MQTT_OK;
}

snl_mqtt_status snl_mqtt_hold_acknowledgements(snl_mqtt *c, int receive_maximum, snl_mqtt_error *error) {
    if (c == NULL || c->started || receive_maximum < 1 || receive_maximum > 65535) {
        fail(error, "%sacknowledgements are held from before the client starts, with a receive maximum of 1 to 65535", NULL);
        return SNL_MQTT_ERR_ARGUMENT;
    }
    c->hold = 1;
    mosquitto_int_option(c->mosq, MOSQ_OPT_RECEIVE_MAXIMUM, receive_maximum);
    return SNL_MQTT_OK;
}

void snl_mqtt_release(snl_mqtt *c, long sequence) {
    if (c == NULL) return;
    pthread_mutex_lock(&c->lock);
    if (sequence > c->released) c->released = sequence < c->handed ? sequence : c->handed;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

snl_mqtt_status snl_mqtt_subscribe(snl_mqtt *c, const char *topic, int qos, snl_mqtt_error *error) {
    if (c == NULL || topic == NULL || topic[0] == 0 || c->started) {
        fail(error, "%ssubscriptions are given before the client starts, with a topic", NULL);
        return SNL_MQTT_ERR_ARGUMENT;
    }
    subscription *grown = realloc(c->subscriptions, sizeof(subscription) * (size_t)(c->subscription_count + 1));
    if (grown == NULL) return SNL_MQTT_ERR_UNKNOWN;
    c->subscriptions = grown;
    c->subscriptions[c->subscription_count++] = (subscription){strdup(topic), qos};
    return SNL_MQTT_OK;
}

snl_mqtt_status snl_mqtt_start(snl_mqtt *c, const char *host, int port, int keepalive, snl_mqtt_error *error) {
    if (c == NULL || host == NULL || port <= 0 || port > 65535 || c->started || c->stopping) {
        fail(error, "%sa host and a port from 1 to 65535 are needed, once", NULL);
        return SNL_MQTT_ERR_ARGUMENT;
    }
    c->host = strdup(host);
    c->port = port;
    c->keepalive = keepalive;
    if (pthread_create(&c->thread, NULL, network, c) != 0) {
        fail(error, "cannot start the MQTT thread: %s", strerror(errno));
        return SNL_MQTT_ERR_UNKNOWN;
    }
    c->started = 1;
    return SNL_MQTT_OK;
}

snl_mqtt_status snl_mqtt_publish(
    snl_mqtt *c, const char *topic, const void *payload, int length, int qos, int retain,
    const char *const *properties, int count, int *mid, snl_mqtt_error *error) {
    if (c == NULL || topic == NULL || topic[0] == 0 || qos < 0 || qos > 2 || length < 0) {
        fail(error, "%sa topic and a QoS of 0, 1 or 2 are needed", NULL);
        return SNL_MQTT_ERR_ARGUMENT;
    }
    mosquitto_property *props = NULL;
    for (int i = 0; i + 1 < 2 * count; i += 2) {
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, properties[i], properties[i + 1]);
    }
    int rc = mosquitto_publish_v5(c->mosq, mid, topic, length, payload, qos, retain != 0, props);
    mosquitto_property_free_all(&props);
    uint64_t one = 1;
    (void)!write(c->wake_fd, &one, sizeof(one));
    // Not connected: a QoS 1 or 2 message waits in the library's queue and goes out at the next connection.
    if (rc == MOSQ_ERR_SUCCESS || (rc == MOSQ_ERR_NO_CONN && qos > 0)) return SNL_MQTT_OK;
    char detail[480];
    snprintf(detail, sizeof(detail), "%s: %s", topic, describe(rc));
    fail(error, "cannot publish to %s", detail);
    return SNL_MQTT_ERR_PUBLISH;
}

void snl_mqtt_get_state(snl_mqtt *c, snl_mqtt_state *out) {
    pthread_mutex_lock(&c->lock);
    *out = c->state;
    pthread_mutex_unlock(&c->lock);
}

int snl_mqtt_take_acks(snl_mqtt *c, snl_mqtt_ack *acks, int capacity) {
    pthread_mutex_lock(&c->lock);
    int n = queue_take(&c->acks, acks, capacity);
    pthread_mutex_unlock(&c->lock);
    return n;
}

int snl_mqtt_take_messages(snl_mqtt *c, snl_mqtt_message *messages, int capacity) {
    pthread_mutex_lock(&c->lock);
    int n = queue_take(&c->messages, messages, capacity);
    pthread_mutex_unlock(&c->lock);
    return n;
}

void snl_mqtt_message_free(snl_mqtt_message *message) {
    free(message->topic);
    free(message->payload);
    message->topic = NULL;
    message->payload = NULL;
}
