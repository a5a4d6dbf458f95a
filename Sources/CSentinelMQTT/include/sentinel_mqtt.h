/// Sentinel's C bridge over libmosquitto (MQTT 5), the same pattern as the OpenCV bridge.
///
/// Every symbol starts with `snl_mqtt_`. A client is an opaque handle owned by the caller, released with
/// `snl_mqtt_destroy`. Every fallible function returns an `snl_mqtt_status` and, on failure, writes a message into
/// the caller's `snl_mqtt_error`. A client runs its own network thread once connected: it connects, and after any
/// failure (broker down, refused credentials) reconnects with backoff until destroyed. The caller polls the
/// connection state and the acknowledgements; no callback crosses into the caller.
#ifndef SENTINEL_MQTT_H
#define SENTINEL_MQTT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SNL_MQTT_OK = 0,
    SNL_MQTT_ERR_ARGUMENT = 1,  ///< a caller mistake: null handle, empty topic, bad QoS
    SNL_MQTT_ERR_TLS = 2,       ///< the CA file cannot be used
    SNL_MQTT_ERR_PUBLISH = 3,   ///< the library refused the message (too large, out of memory)
    SNL_MQTT_ERR_SUBSCRIBE = 4,
    SNL_MQTT_ERR_UNKNOWN = 5,
} snl_mqtt_status;

typedef struct {
    char message[512];
} snl_mqtt_error;

typedef struct snl_mqtt snl_mqtt;

/// What the network thread last saw.
typedef struct {
    int connected;
    /// Successful connections so far (a change means the session was re-established).
    int connects;
    /// Failed attempts since the last success.
    int failures;
    /// Why the last attempt failed or the connection dropped ("" while connected).
    char reason[256];
} snl_mqtt_state;

/// One PUBACK: the message id `snl_mqtt_publish` gave, and the broker's reason code (below 0x80: accepted).
typedef struct {
    int mid;
    int reason;
} snl_mqtt_ack;

/// One message received on a subscription.
typedef struct {
    char *topic;
    void *payload;
    int length;
    /// Its place among the messages this client received, from 1 (for `snl_mqtt_release`).
    long sequence;
} snl_mqtt_message;

/// The largest MQTT packet a client takes (told to the broker when connecting, which then drops larger messages for
/// it): 128 KiB, twice the largest message a fleet takes (a visitor event with every zone of a large showroom is a few
/// KiB).
#define SNL_MQTT_MAX_PACKET (128 * 1024)

/// A client with this id. `clean_start` 0 keeps the broker's session (subscriptions and queued messages) across
/// reconnects, with `session_expiry` seconds after a disconnect.
snl_mqtt_status snl_mqtt_create(
    const char *client_id, int clean_start, uint32_t session_expiry, snl_mqtt **out, snl_mqtt_error *error);
void snl_mqtt_destroy(snl_mqtt *client);
/// Disconnects and ends the network thread for good; what was received stays to be taken.
void snl_mqtt_stop(snl_mqtt *client);

snl_mqtt_status snl_mqtt_credentials(
    snl_mqtt *client, const char *username, const char *password, snl_mqtt_error *error);
snl_mqtt_status snl_mqtt_tls(snl_mqtt *client, const char *ca_file, snl_mqtt_error *error);
/// The last will, published by the broker when the connection is lost without a disconnect.
snl_mqtt_status snl_mqtt_will(
    snl_mqtt *client, const char *topic, const char *payload, int qos, int retain, snl_mqtt_error *error);
/// Acknowledges a received QoS 1 message only once the owner has released it (`snl_mqtt_release`), with the
/// broker sending at most `receive_maximum` unacknowledged messages: given before `snl_mqtt_start`. Without it a
/// message is acknowledged as it is handed over.
snl_mqtt_status snl_mqtt_hold_acknowledgements(snl_mqtt *client, int receive_maximum, snl_mqtt_error *error);
/// Releases every message up to `sequence` (a message's own): they may be acknowledged.
void snl_mqtt_release(snl_mqtt *client, long sequence);
/// Topics to subscribe to (MQTT 5 shared subscriptions such as `$share/group/topic` allowed) at every connect.
snl_mqtt_status snl_mqtt_subscribe(snl_mqtt *client, const char *topic, int qos, snl_mqtt_error *error);

/// Starts the network thread: connect, then keep connected.
snl_mqtt_status snl_mqtt_start(snl_mqtt *client, const char *host, int port, int keepalive, snl_mqtt_error *error);

/// Queues a message; `mid` identifies its PUBACK. `properties` are `count` key/value pairs sent as MQTT 5 user
/// properties.
snl_mqtt_status snl_mqtt_publish(
    snl_mqtt *client, const char *topic, const void *payload, int length, int qos, int retain,
    const char *const *properties, int count, int *mid, snl_mqtt_error *error);

void snl_mqtt_get_state(snl_mqtt *client, snl_mqtt_state *out);
/// Moves up to `capacity` acknowledgements received since the last call into `acks`; returns how many.
int snl_mqtt_take_acks(snl_mqtt *client, snl_mqtt_ack *acks, int capacity);
/// Moves up to `capacity` received messages into `messages`; returns how many. Free each with
/// `snl_mqtt_message_free`.
int snl_mqtt_take_messages(snl_mqtt *client, snl_mqtt_message *messages, int capacity);
void snl_mqtt_message_free(snl_mqtt_message *message);

#ifdef __cplusplus
}
#endif

#endif
