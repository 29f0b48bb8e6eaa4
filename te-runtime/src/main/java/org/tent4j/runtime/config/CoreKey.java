package org.tent4j.runtime.config;

import org.tent4j.api.EngineConfig;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionSpec.Type;

import java.util.List;

/** The engine's own configuration keys, with types, defaults and one line of documentation each. */
public final class CoreKey {
    /** Overrides the detected machine id; engines with equal ids are treated as one host (tests, containers). */
    public static final String MACHINE_ID = "machine.id";
    /** Namespace (cluster) prefix of keys in a metadata store, so several clusters can share one store. */
    public static final String METADATA_CLUSTER = "metadata.cluster";
    /** Lifetime of a published descriptor in a metadata store; the engine refreshes it well before it ends. */
    public static final String METADATA_TTL = "metadata.ttl";
    public static final String FAILOVER_MAX_ATTEMPTS = "failover.max_attempts";
    public static final String TRANSFER_AWAIT_SPIN = "transfer.await_spin";
    public static final String PATHS_MAX_INFLIGHT = "paths.max_inflight";
    public static final String PATHS_MAX_INFLIGHT_BYTES = "paths.max_inflight_bytes";
    public static final String PATHS_AFFINITY_BYTES = "paths.affinity_bytes";
    public static final String PATHS_COOLDOWN = "paths.cooldown";
    public static final String PATHS_MAX_COOLDOWN = "paths.max_cooldown";
    public static final String QOS_AGING = "qos.aging";
    /** How many tasks a batch may hold at most. */
    public static final String BATCH_MAX_CAPACITY = "batch.max_capacity";

    /** Largest control-plane frame a peer may send; a larger one closes its connection. */
    public static final String CONTROL_MAX_FRAME = "control.max_frame";
    public static final String CONTROL_MAX_CONNECTIONS = "control.max_connections";
    public static final String CONTROL_MAX_REQUESTS_PER_CONNECTION = "control.max_requests_per_connection";
    public static final String CONTROL_MAX_REQUESTS = "control.max_requests";
    /** Bytes of requests of all connections waiting for or on a worker: the count alone allows max_requests frames. */
    public static final String CONTROL_MAX_REQUEST_BYTES = "control.max_request_bytes";
    public static final String CONTROL_IDLE_TIMEOUT = "control.idle_timeout";
    public static final String CONTROL_CALL_TIMEOUT = "control.call_timeout";
    /** TCP keep-alive of control-plane connections, so a peer that went silent is noticed without a call. */
    public static final String CONTROL_KEEPALIVE_IDLE = "control.keepalive_idle";
    public static final String CONTROL_KEEPALIVE_INTERVAL = "control.keepalive_interval";
    public static final String CONTROL_KEEPALIVE_COUNT = "control.keepalive_count";
    /** Notifications received and not yet taken by the application; beyond it new ones are dropped (logged). */
    public static final String NOTIFICATIONS_MAX_QUEUED = "notifications.max_queued";
    /** Bytes of notification text received and not yet taken, of all peers; beyond it new ones are dropped (counted). */
    public static final String NOTIFICATIONS_MAX_QUEUED_BYTES = "notifications.max_queued_bytes";
    /** The same for one sender, so one flooding peer cannot take every other peer's room. */
    public static final String NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER = "notifications.max_queued_bytes_per_peer";

    /** Shared secret every control-plane and data connection proves with a challenge-response before it is served. */
    public static final String SECURITY_TOKEN = "security.token";
    public static final String SECURITY_TOKEN_FILE = "security.token_file";
    public static final String SECURITY_TLS_CERTIFICATE = "security.tls.certificate";
    public static final String SECURITY_TLS_PRIVATE_KEY = "security.tls.private_key";
    public static final String SECURITY_TLS_TRUSTED_CERTIFICATES = "security.tls.trusted_certificates";

    public static final List<OptionSpec> ALL = List.of(
            OptionSpec.of(EngineConfig.SEGMENT_NAME, Type.STRING, "", "segment name; empty = host:port of the control plane"),
            OptionSpec.of(EngineConfig.METADATA_URI, Type.STRING, "p2p", "metadata store URI(s), comma separated: p2p, memory://name, etcd://, redis://, http://"),
            OptionSpec.of(METADATA_CLUSTER, Type.STRING, "default", "namespace prefix of keys in a metadata store"),
            OptionSpec.of(METADATA_TTL, Type.DURATION, "10s", "lifetime of a published descriptor (kept alive while the engine runs)"),
            OptionSpec.of(EngineConfig.CONTROL_HOST, Type.STRING, "", "host to bind and advertise; empty = first non-loopback IPv4, else 127.0.0.1"),
            OptionSpec.of(EngineConfig.CONTROL_PORT, Type.INT, "0", "control-plane port; 0 = a free port"),
            OptionSpec.of(EngineConfig.TRANSPORTS_ENABLED, Type.STRING, "*", "transports to run, comma separated, or * for every available one"),
            OptionSpec.of(EngineConfig.TRANSPORTS_PREFERENCE, Type.STRING, "", "preferred transport order, comma separated; unlisted ones follow by rank"),
            OptionSpec.of(EngineConfig.TRANSPORTS_FALLBACK, Type.BOOLEAN, "true", "allow falling back from the preferred transport (logged as WARN)"),
            OptionSpec.of(EngineConfig.SLICE_SIZE, Type.SIZE, "1m", "largest slice handed to a transport"),
            OptionSpec.of(EngineConfig.WORKERS, Type.INT, "0", "worker threads; 0 = number of cores"),
            OptionSpec.of(EngineConfig.TRANSFER_TIMEOUT, Type.DURATION, "30s", "how long a task waits for a peer when the request sets no deadline"),
            OptionSpec.of(TRANSFER_AWAIT_SPIN, Type.DURATION, "50us", "how long a thread in await spins for the end before it sleeps, saving the wake-up of a caller that waits for one request at a time; a thread whose last 4 spins ended too soon stops spinning (and tries again every 64 waits); 0 = never spin"),
            OptionSpec.of(EngineConfig.METRICS_PORT, Type.INT, "-1", "Prometheus endpoint port, on control.host; -1 = none, 0 = a free port"),
            OptionSpec.of(MACHINE_ID, Type.STRING, "", "override the detected machine id (boot id + machine id)"),
            OptionSpec.of(BATCH_MAX_CAPACITY, Type.INT, "65536", "largest batch capacity accepted"),
            OptionSpec.of(FAILOVER_MAX_ATTEMPTS, Type.INT, "4", "times each slice of a task may be retried on another path or transport before the task fails"),
            OptionSpec.of(PATHS_MAX_INFLIGHT, Type.INT, "32", "slices in flight on one path at most; the rest wait in priority queues"),
            OptionSpec.of(PATHS_MAX_INFLIGHT_BYTES, Type.SIZE, "4m", "bytes in flight on one path at most (one slice always fits); more only queues in socket buffers, where the bytes go cold in cache"),
            OptionSpec.of(PATHS_AFFINITY_BYTES, Type.SIZE, "256k", "a submitting thread's slices go to its own path of a group (threads take the paths in turn) while that path has room and at most this many bytes in flight, so one connection carries a thread's whole burst; larger slices and a full or paused home go by predicted finish time; 0 = always by predicted finish time"),
            OptionSpec.of(PATHS_COOLDOWN, Type.DURATION, "100ms", "first pause of a path that failed 3 times in a row; doubles on each further failure"),
            OptionSpec.of(PATHS_MAX_COOLDOWN, Type.DURATION, "10s", "longest pause of a failing path"),
            OptionSpec.of("policy", Type.STRING, "", "JSON array of policy rules, evaluated in order (see docs/ARCHITECTURE.md)"),
            OptionSpec.of(CONTROL_MAX_FRAME, Type.SIZE, "4m", "largest control-plane frame a peer may send (descriptors, handshakes); a larger one closes its connection"),
            OptionSpec.of(CONTROL_MAX_CONNECTIONS, Type.INT, "256", "inbound control-plane connections at most; more are closed at once"),
            OptionSpec.of(CONTROL_MAX_REQUESTS_PER_CONNECTION, Type.INT, "64", "requests of one control-plane connection waiting for or on a worker; more are answered TOO_MANY_REQUESTS"),
            OptionSpec.of(CONTROL_MAX_REQUESTS, Type.INT, "1024", "control-plane requests of all connections waiting for or on a worker; more are answered TOO_MANY_REQUESTS"),
            OptionSpec.of(CONTROL_MAX_REQUEST_BYTES, Type.SIZE, "64m", "bytes of control-plane requests (their payloads) of all connections waiting for or on a worker; a request that would go beyond is answered TOO_MANY_REQUESTS and counted (tent4j_control_request_budget_refusals_total); at least control.max_frame"),
            OptionSpec.of(CONTROL_IDLE_TIMEOUT, Type.DURATION, "5m", "close a control-plane connection that received nothing for this long and has no call or request open; 0 = never"),
            OptionSpec.of(CONTROL_CALL_TIMEOUT, Type.DURATION, "30s", "how long an asynchronous control-plane call (a notification) waits for its reply"),
            OptionSpec.of(CONTROL_KEEPALIVE_IDLE, Type.DURATION, "15s", "TCP keep-alive of control-plane connections: probe a peer after this long without traffic, so one that went silent (no reset) is noticed and its calls fail without waiting for control.call_timeout; whole seconds, 0 = off"),
            OptionSpec.of(CONTROL_KEEPALIVE_INTERVAL, Type.DURATION, "5s", "time between control-plane keep-alive probes; whole seconds"),
            OptionSpec.of(CONTROL_KEEPALIVE_COUNT, Type.INT, "3", "unanswered control-plane keep-alive probes after which the connection closes"),
            OptionSpec.of(NOTIFICATIONS_MAX_QUEUED, Type.INT, "65536", "received notifications kept until the application takes them; more are dropped with a WARN"),
            OptionSpec.of(NOTIFICATIONS_MAX_QUEUED_BYTES, Type.SIZE, "64m", "bytes of received notifications (message text) kept until the application takes them, of all peers; more are dropped, logged and counted (tent4j_notifications_dropped_total)"),
            OptionSpec.of(NOTIFICATIONS_MAX_QUEUED_BYTES_PER_PEER, Type.SIZE, "16m", "the same for the notifications of one sending segment, so one peer cannot fill the room of all"),
            OptionSpec.of(SECURITY_TOKEN, Type.STRING, "", "shared secret; when set, every control-plane and data connection starts with a mutual HMAC-SHA256 challenge-response and peers without it are refused; empty = anyone who can connect is served (logged as WARN)"),
            OptionSpec.of(SECURITY_TOKEN_FILE, Type.STRING, "", "file holding security.token (surrounding whitespace dropped); keeps the secret out of command lines and environment"),
            OptionSpec.of(SECURITY_TLS_CERTIFICATE, Type.STRING, "", "PEM certificate (chain) of this engine; with security.tls.private_key, control-plane and tcp data connections run over mutual TLS"),
            OptionSpec.of(SECURITY_TLS_PRIVATE_KEY, Type.STRING, "", "PEM private key (PKCS#8) of security.tls.certificate"),
            OptionSpec.of(SECURITY_TLS_TRUSTED_CERTIFICATES, Type.STRING, "", "PEM certificates that sign peers' certificates; empty = trust security.tls.certificate itself (one key pair for the cluster)"),
            OptionSpec.of(QOS_AGING, Type.DURATION, "5ms", "a MEDIUM slice waiting this long (LOW: twice) is served before HIGH ones"));

    private CoreKey() {
    }
}
