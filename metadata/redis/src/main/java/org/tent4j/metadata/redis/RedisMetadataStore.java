package org.tent4j.metadata.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;

import redis.clients.jedis.ConnectionPoolConfig;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.SetParams;

/**
 * {@link MetadataStore} on Redis through a pooled Jedis {@link RedisClient}: {@code GET}, {@code SET key value [PX ttl]},
 * {@code DEL}, as Mooncake does (keys are the UTF-8 bytes of the key, values stored as given). Its watches are
 * {@link RedisWatches}.
 *
 * <p>Watch: keyspace notifications ({@code __keyspace@<db>__:<key>}) on one dedicated subscriber connection. The
 * first watch turns on the flags it needs ({@code K g $ x e}) with {@code CONFIG SET notify-keyspace-events}, merged
 * into what the server already has; if CONFIG is refused (managed Redis, ACL), watches poll the watched keys with
 * {@code MGET} instead. A notification names only the event, so the value is read afterwards; delivery is therefore
 * of states, at least once and in order. After the subscriber connection is lost it reconnects, turns notifications on
 * again (a restarted server forgets CONFIG SET) and re-reads every watched key, so changes while it was away are
 * reported.
 */
final class RedisMetadataStore implements MetadataStore {
    private static final Logger LOG = LoggerFactory.getLogger(RedisMetadataStore.class);

    private final RedisAddress address;
    private final JedisClientConfig clientConfig;
    private final RedisClient redis;
    private final RedisWatches watches;
    private volatile boolean closed;

    RedisMetadataStore(RedisAddress address, SSLSocketFactory tls, Duration timeout, Duration connectTimeout, int poolSize,
            Duration pollInterval, boolean notificationsAllowed) {
        this.address = address;
        DefaultJedisClientConfig.Builder cfg = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(millis(connectTimeout))
                .socketTimeoutMillis(millis(timeout))
                .database(address.database())
                .clientName("tent4j-metadata")
                // Jedis (unlike RedisClient) speaks RESP2 only; saying so up front avoids a warning per connection
                .autoNegotiateProtocol(false);
        if (address.password() != null) {
            cfg.user(address.user()).password(address.password());
        }
        if (address.tls()) {
            SSLParameters verifyHost = new SSLParameters();
            // JSSE checks the certificate names the host we dialled; Jedis does not by itself
            verifyHost.setEndpointIdentificationAlgorithm("HTTPS");
            cfg.ssl(true).sslParameters(verifyHost);
            if (tls != null) {
                cfg.sslSocketFactory(tls);
            }
        }
        this.clientConfig = cfg.build();
        ConnectionPoolConfig poolConfig = new ConnectionPoolConfig();
        poolConfig.setMaxTotal(poolSize);
        poolConfig.setMaxIdle(poolSize);
        poolConfig.setMinIdle(0);
        poolConfig.setMaxWait(timeout);
        poolConfig.setBlockWhenExhausted(true);
        poolConfig.setJmxEnabled(false);
        this.redis = RedisClient.builder()
                .hostAndPort(address.host(), address.port())
                .clientConfig(clientConfig)
                .poolConfig(poolConfig)
                .build();
        this.watches = new RedisWatches(this, timeout, pollInterval, notificationsAllowed,
                "__keyspace@" + address.database() + "__:");
    }

    private static int millis(Duration d) {
        return (int) Math.min(Integer.MAX_VALUE, d.toMillis());
    }

    /** Fails with METADATA_UNAVAILABLE unless the server answers PING (with the configured credentials). */
    void probe() {
        call("ping", "", redis::ping);
    }

    @Override
    public String uri() {
        return address.masked();
    }

    @Override
    public Optional<byte[]> get(String key) {
        checkKey(key);
        byte[] k = bytes(key);
        return Optional.ofNullable(call("get", key, () -> redis.get(k)));
    }

    @Override
    public void put(String key, byte[] value, Duration ttl) {
        checkKey(key);
        if (value == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "put of '" + key + "' into " + uri()
                    + ": value is null (use delete)");
        }
        if (ttl == null || ttl.isNegative()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "put of '" + key + "' into " + uri()
                    + ": ttl must be zero or positive, got " + ttl);
        }
        byte[] k = bytes(key);
        // plain SET drops any earlier expiry, so a put without TTL makes the key permanent again
        SetParams params = ttl.isZero() ? null : SetParams.setParams().px(Math.max(1, ttl.toMillis()));
        call("put", key, () -> params == null ? redis.set(k, value) : redis.set(k, value, params));
    }

    @Override
    public boolean delete(String key) {
        checkKey(key);
        byte[] k = bytes(key);
        return call("delete", key, () -> redis.del(k)) > 0;
    }

    @Override
    public Watch watch(String key, MetadataListener listener) {
        checkKey(key);
        if (listener == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "watch of '" + key + "' on " + uri()
                    + ": listener is null");
        }
        ensureOpen();
        return watches.watch(key, listener);
    }

    /** A connection of its own (not pooled), answering PING; METADATA_UNAVAILABLE naming {@code what} if not. */
    Jedis connect(String what) {
        try {
            Jedis j = new Jedis(new HostAndPort(address.host(), address.port()), clientConfig);
            j.ping();
            return j;
        } catch (JedisException e) {
            throw unavailable("opening the " + what, "", e);
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        watches.close();
        redis.close();
        LOG.debug("closed redis metadata store {}", uri());
    }

    /** A connection of its own, not yet used: the watch subscriber's reconnects, which handle failures themselves. */
    Jedis dial() {
        return new Jedis(new HostAndPort(address.host(), address.port()), clientConfig);
    }

    /** The values of {@code keys} in one round trip ({@code null} where absent), for watches that poll. */
    List<byte[]> getAll(List<String> keys) {
        byte[][] raw = keys.stream().map(RedisMetadataStore::bytes).toArray(byte[][]::new);
        return call("poll", keys.getFirst(), () -> redis.mget(raw));
    }

    // ---------------------------------------------------------------------------------------------- internals

    /**
     * Runs one command on a pooled connection. A connection error is retried once on a fresh connection after
     * dropping every idle one, because after a server restart all pooled connections are dead but the server is back.
     */
    private <T> T call(String op, String key, Supplier<T> command) {
        ensureOpen();
        JedisException failure = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                return command.get();
            } catch (JedisConnectionException e) {
                failure = e;
                if (closed) {
                    break;
                }
                redis.getPool().clear();
            } catch (JedisException e) {
                failure = e;
                break;
            } catch (IllegalStateException e) {
                // the pool was closed under us
                ensureOpen();
                throw unavailable(op, key, e);
            }
        }
        throw unavailable(op, key, failure);
    }

    TransferException unavailable(String op, String key, Throwable cause) {
        ensureOpen();
        String what = key.isEmpty() ? op : op + " '" + key + "'";
        String why = cause instanceof JedisAccessControlException || isAuthFailure(cause)
                ? "authentication failed: " + describe(cause)
                : "failed: " + describe(cause);
        return new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + uri() + ": " + what
                + " " + why, cause);
    }

    private static boolean isAuthFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = String.valueOf(c.getMessage());
            if (c instanceof JedisAccessControlException || m.startsWith("WRONGPASS") || m.startsWith("NOAUTH")
                    || m.contains("invalid password") || m.contains("invalid username-password")) {
                return true;
            }
        }
        return false;
    }

    /** The exception and its root cause in one line; Jedis messages never contain the password. */
    static String describe(Throwable t) {
        if (t == null) {
            return "unknown error";
        }
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String first = t.getClass().getSimpleName() + ": " + t.getMessage();
        if (root == t || String.valueOf(t.getMessage()).contains(String.valueOf(root.getMessage()))) {
            return first;
        }
        return first + " (caused by " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
    }

    void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "redis metadata store " + uri()
                    + " is closed");
        }
    }

    private void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "redis metadata store " + uri()
                    + ": key must not be null or empty");
        }
    }

    private static byte[] bytes(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }
}
